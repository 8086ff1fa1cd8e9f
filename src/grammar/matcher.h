// Runs a Grammar over bytes as an Earley parser: one set of items per byte read, an item being "at this position
// of an alternative, begun at that set". Any context-free grammar works (left recursion, ambiguity) in polynomial
// time; a first version that kept whole parse stacks went exponential on ambiguous grammars (592 stacks, then
// 5,407, then 205,200 after two bytes of a random test grammar), which a request could send on purpose.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "grammar/grammar.h"

namespace tern::grammar {

struct Item {
    uint32_t position;   // the next element to match; a kEnd position: the alternative is complete
    uint32_t origin;     // the set where this alternative began
    uint32_t count = 0;  // at a kRepeat position: how many times its rule has been matched so far
    // Only in a chart started inside a counted repetition (start_inside with a kUnknownCount caller): 1 + the count
    // the enclosing repetition had when the element this item is part of began; 0 outside.
    uint32_t element = 0;
    bool operator==(const Item&) const = default;
};

// A count at a repetition's position when a token mask is compiled: the real one is only known at run time. Counts
// from here up are "this many more than the unknown one": the rule may always come again, and leaving the repetition
// is not followed but noted (Chart::may_leave_repetition), since the leaving depends on the count.
inline constexpr uint32_t kUnknownCount = 1u << 30;

// The sets of items, one per byte read, stored flat so that going back is a truncation.
class Chart {
public:
    explicit Chart(const Grammar& grammar) : grammar_(&grammar) {}

    // Starts over with set 0 made of `items` and what they predict.
    void start(const std::vector<Item>& items);
    // Starts over at the beginning of the root rule.
    void start_at_root();
    // Starts over inside an alternative, at `position`, with `callers` the items (innermost first) that referred to
    // its rule and to each enclosing one: set 0 holds exactly these items, nothing predicted, so that a rule
    // completing returns into its caller as it would in a whole parse.
    void start_inside(const Item& position, const std::vector<Item>& callers);
    // Adds the set after `byte`; false (and nothing added) when no item can take it.
    bool scan(uint8_t byte);
    // Adds a set for every byte of `bytes`, or none of them (false) when some byte is refused.
    bool scan_all(std::string_view bytes);
    // Keeps the first `sets` sets: going back to an earlier byte.
    void truncate(size_t sets);
    size_t sets() const { return set_begin_.size(); }
    // Whether the last set holds `rule` complete from set 0.
    bool completed_from_start(uint32_t rule) const;
    // The bytes some item of the last set can take.
    ByteSet next_bytes() const;
    // The byte-set positions of the last set's items, each once.
    std::vector<uint32_t> scannable_positions() const;
    const Grammar& grammar() const { return *grammar_; }
    // From now on, at most `operations` items added and waiting items looked at, and at most `per_set` for one
    // byte; past either every scan fails and exhausted() is true. A hostile ambiguous grammar (root ::= root root |
    // "a") makes each byte cost the square of the bytes so far (500 bytes took 446 ms, the next 500 would take 3 s);
    // its requests must not hold up the engine, while a sane grammar's byte costs tens of operations whatever the
    // length. Unlimited until called.
    void limit_work(uint64_t operations, uint64_t per_set) {
        work_left_ = operations;
        set_work_limit_ = per_set;
        exhausted_ = false;
    }
    bool exhausted() const { return exhausted_; }
    // Whether a repetition counted from kUnknownCount could have ended in the last set.
    bool may_leave_repetition() const { return leaves_.back(); }
    // The items of set `set`, and the indices (into all items) of those that wait for a rule.
    std::span<const Item> items_of(size_t set) const {
        const size_t end = set + 1 < set_begin_.size() ? set_begin_[set + 1] : items_.size();
        return {items_.data() + set_begin_[set], end - set_begin_[set]};
    }
    std::span<const uint32_t> waiting_of(size_t set) const {
        const size_t end = set + 1 < waiting_begin_.size() ? waiting_begin_[set + 1] : waiting_.size();
        return {waiting_.data() + waiting_begin_[set], end - waiting_begin_[set]};
    }
    const Item& item(size_t index) const { return items_[index]; }

private:
    struct ItemHash {
        size_t operator()(const Item& item) const {
            const uint64_t a = (uint64_t{item.position} << 32) | item.origin;
            const uint64_t b = (uint64_t{item.count} << 32) | item.element;
            return static_cast<size_t>((a ^ (b * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull >> 17);
        }
    };
    void add(Item item);
    void close_last_set();
    void predict(const Item& item, const Position& position, uint32_t current);
    void complete(const Item& item, uint32_t current);

    const Grammar* grammar_;
    std::vector<Item> items_;
    std::vector<size_t> set_begin_;
    // The items waiting for a rule (next element a reference), by set: what completion looks through.
    std::vector<uint32_t> waiting_;
    std::vector<size_t> waiting_begin_;
    bool spend_work();
    void undo_last_set(size_t items_before);

    std::vector<bool> leaves_;  // by set: may_leave_repetition
    uint64_t work_left_ = std::numeric_limits<uint64_t>::max();
    uint64_t set_work_limit_ = std::numeric_limits<uint64_t>::max();
    uint64_t set_work_ = 0;  // spent on the set being built
    bool exhausted_ = false;
    std::unordered_set<Item, ItemHash> in_last_set_;
};

class Matcher {
public:
    explicit Matcher(const Grammar& grammar);

    // Advances by one byte; false (and nothing changed) when the grammar cannot take it here.
    bool accept_byte(uint8_t byte);
    // Advances by every byte of `bytes`, or by none of them (false) when some byte is refused.
    bool accept_bytes(std::string_view bytes);
    // Goes back `bytes` bytes (at most as many as were accepted).
    void rollback(size_t bytes);
    // Whether the bytes so far are a whole sentence of the grammar (the end of text may come now).
    bool can_end() const { return chart_.completed_from_start(0); }
    // The bytes that may come next.
    ByteSet next_bytes() const { return chart_.next_bytes(); }
    size_t bytes_accepted() const { return chart_.sets() - 1; }
    const Grammar& grammar() const { return chart_.grammar(); }

private:
    Chart chart_;
};

// Whether `text` is a whole sentence of `grammar`; whether it is the start of one.
bool matches(const Grammar& grammar, std::string_view text);
bool matches_prefix(const Grammar& grammar, std::string_view text);

}  // namespace tern::grammar
