// A grammar over bytes: what every constraint (GBNF text, a regular expression, a JSON Schema, a choice list)
// compiles to, and what the matcher and the token masks run. Rules are alternatives of sequences; an element is a
// set of bytes or a reference to a rule. Characters outside ASCII are already spelled as their UTF-8 bytes, so the
// matcher never decodes UTF-8 and a token that ends inside a character (a byte-fallback token) is just bytes.
//
// Laid out flat for the matcher: every element of every alternative is a Position; an alternative ends with a
// kEnd position, so "the next element" is always position + 1.
//
// A bounded repetition x{m,n} is one kRepeat position that counts (the count lives in the matcher's item), not n
// nested optional copies: the copies gave x's rule n callers, so no token reaching past one x could be judged at
// compile time (a maxLength string's mask took 421 ms at p99 on a 152k vocabulary), and every byte walked a chain
// of n open items.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace tern::grammar {

using ByteSet = std::bitset<256>;

struct Position {
    enum Kind : uint8_t { kBytes, kRule, kRepeat, kEnd };
    Kind kind = kEnd;
    uint32_t index = 0;  // kBytes: into Grammar::byte_sets; kRule, kRepeat: the rule referred to
    uint32_t min = 0;    // kRepeat: the rule follows itself min to max times here
    uint32_t max = 0;
    bool refers_to_rule() const { return kind == kRule || kind == kRepeat; }
};

struct Rule {
    std::string name;
    std::vector<uint32_t> alternatives;  // first position of each alternative
};

class Grammar {
public:
    // Rule 0 is the root. Built by GrammarBuilder, which checks what the matcher relies on (no undefined rule, no
    // left recursion).
    const std::vector<Rule>& rules() const { return rules_; }
    const std::vector<Position>& positions() const { return positions_; }
    const std::vector<ByteSet>& byte_sets() const { return byte_sets_; }
    const Position& at(uint32_t position) const { return positions_[position]; }
    const ByteSet& bytes_at(uint32_t position) const { return byte_sets_[positions_[position].index]; }
    // The rule whose alternative holds `position`.
    uint32_t rule_of(uint32_t position) const { return rule_of_position_[position]; }
    // Whether the rule can match the empty text.
    bool nullable(uint32_t rule) const { return nullable_[rule]; }
    // Readable form, one rule a line, for errors and tests.
    std::string to_string() const;

private:
    friend class GrammarBuilder;
    std::vector<Rule> rules_;
    std::vector<Position> positions_;
    std::vector<ByteSet> byte_sets_;
    std::vector<uint32_t> rule_of_position_;
    std::vector<bool> nullable_;
};

// An element while building: a byte set, a rule id, or a rule repeated min to max times.
struct Element {
    bool is_rule = false;
    ByteSet bytes;
    uint32_t rule = 0;
    bool counted = false;
    uint32_t min = 1, max = 1;
    static Element of_bytes(const ByteSet& set) { return {false, set, 0}; }
    static Element of_byte(uint8_t byte) {
        ByteSet set;
        set.set(byte);
        return of_bytes(set);
    }
    static Element of_rule(uint32_t id) { return {true, {}, id}; }
    static Element of_repeat(uint32_t id, uint32_t min, uint32_t max) { return {true, {}, id, true, min, max}; }
};
using Sequence = std::vector<Element>;

class GrammarBuilder {
public:
    // Rule ids are handed out by name; a name used before it is defined is fine until build().
    uint32_t rule_id(const std::string& name);
    // A fresh helper rule named after `base` (base#1, base#2, ...: no written name can collide with it).
    uint32_t fresh_rule(const std::string& base);
    void add_alternative(uint32_t rule, Sequence sequence);
    bool defined(uint32_t rule) const { return defined_[rule]; }
    void mark_defined(uint32_t rule) { defined_[rule] = true; }
    const std::string& name(uint32_t rule) const { return names_[rule]; }

    // Checks that every rule is defined and lays the rules out; `root` becomes rule 0. Left recursion is fine: the
    // matcher is an Earley parser.
    Result<Grammar> build(const std::string& root = "root") const;

private:
    Status check_defined(uint32_t root) const;
    void twin_counted_rules(std::vector<std::string>& names, std::vector<std::vector<Sequence>>& alternatives) const;

    std::unordered_map<std::string, uint32_t> ids_;
    std::vector<std::string> names_;
    std::vector<std::vector<Sequence>> alternatives_;
    std::vector<bool> defined_;
};

}  // namespace tern::grammar
