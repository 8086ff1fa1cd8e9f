// Property test for regex_to_gbnf with PCRE2 as the oracle: random regexes (from a small random syntax tree, printed
// in varied but equivalent spellings) and candidate strings (members drawn from the tree, their mutations, and
// random strings over the same alphabet). The grammar must accept a string exactly when PCRE2 matches all of it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/printable.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar/utf8_ranges.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace tern::grammar {
namespace {

constexpr uint32_t kUnbounded = UINT32_MAX;

// Letters, digits, the regex metacharacters, the characters JSON escapes, and two-, three- and four-byte UTF-8.
const std::vector<uint32_t> kAlphabet = {'a',  'b',  'c',  'x',  '0',  '1', '9',  '_',  '-',    ' ',    '.', '\n',
                                         '\t', '\b', 0x0B, 0x01, 0x1F, '"', '\\', ']',  '[',    '^',    '{', '}',
                                         '$',  '(',  ')',  '*',  '+',  '?', '|',  0xE9, 0x4E2D, 0x1F600};
// The same without anything JSON escapes, for patterns whose json_string grammar must equal the plain one.
const std::vector<uint32_t> kJsonSafeAlphabet = {'a', 'b', 'x', '0', '9', '_', '-',  ' ',    '.',    ']',
                                                 '^', '{', '$', '(', '*', '|', 0xE9, 0x4E2D, 0x1F600};

bool is_json_special(uint32_t code_point) { return code_point < 0x20 || code_point == '"' || code_point == '\\'; }

std::string utf8(const std::vector<uint32_t>& code_points) {
    std::string text;
    for (uint32_t code_point : code_points) text += encode_utf8(code_point);
    return text;
}

// The text as the content of a JSON string, spelled the way the json_string grammar expects.
std::string json_escape(const std::vector<uint32_t>& code_points) {
    std::string text;
    for (uint32_t cp : code_points) {
        if (!is_json_special(cp)) {
            text += utf8({cp});
            continue;
        }
        static const std::string kShort[] = {"\\b", "\\t", "\\n", "", "\\f", "\\r"};
        if (cp == '"' || cp == '\\') {
            text += {'\\', static_cast<char>(cp)};
        } else if (cp >= '\b' && cp <= '\r' && cp != 0x0B) {
            text += kShort[cp - '\b'];
        } else {
            static constexpr char kHex[] = "0123456789abcdef";
            text += std::string("\\u00") + kHex[cp >> 4] + kHex[cp & 0xF];
        }
    }
    return text;
}

struct ClassItem {
    uint32_t first = 0;
    uint32_t last = 0;
    char shorthand = 0;  // d w s D W S, or 0 for the range first..last
};

struct RandomRegex {
    enum class Kind { kLiteral, kClass, kDot, kConcat, kAlternation, kRepeat };
    Kind kind = Kind::kConcat;
    uint32_t code_point = 0;
    std::vector<ClassItem> items;
    bool negated = false;
    std::vector<RandomRegex> children;
    uint32_t min = 0;
    uint32_t max = 0;
    std::string quantifier;  // as written, e.g. "{1,3}?"
};

bool in_shorthand(char shorthand, uint32_t cp) {
    const bool digit = cp >= '0' && cp <= '9';
    const bool word = digit || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
    const bool space = (cp >= '\t' && cp <= '\r') || cp == ' ';
    switch (shorthand) {
        case 'd': return digit;
        case 'w': return word;
        case 's': return space;
        case 'D': return !digit;
        case 'W': return !word;
        default: return !space;
    }
}

bool class_contains(const RandomRegex& node, uint32_t cp) {
    if (node.kind == RandomRegex::Kind::kDot) return cp != '\n';
    bool found = false;
    for (const ClassItem& item : node.items) {
        found = found || (item.shorthand ? in_shorthand(item.shorthand, cp) : cp >= item.first && cp <= item.last);
    }
    return found != node.negated;
}

class RegexGenerator {
public:
    RegexGenerator(uint32_t seed, bool json_safe)
        : rng_(seed), json_safe_(json_safe), alphabet_(json_safe ? kJsonSafeAlphabet : kAlphabet) {}

    RandomRegex node(int depth) {
        const int choice = depth == 0 ? 0 : pick(0, 9);
        if (choice <= 2) return leaf();
        RandomRegex composite;
        if (choice <= 5) {
            composite.kind = RandomRegex::Kind::kConcat;
            // Sequences of parts that may be empty, repeated, are where the converter must rewrite the most.
            const bool all_optional = chance(25);
            for (int child_idx = pick(0, 4); child_idx > 0; --child_idx) {
                composite.children.push_back(all_optional ? optional(node(depth - 1)) : node(depth - 1));
            }
        } else if (choice <= 7) {
            composite.kind = RandomRegex::Kind::kAlternation;
            for (int child_idx = pick(2, 3); child_idx > 0; --child_idx) composite.children.push_back(node(depth - 1));
        } else {
            composite.kind = RandomRegex::Kind::kRepeat;
            composite.children.push_back(node(depth - 1));
            choose_quantifier(composite);
        }
        return composite;
    }

    std::string pattern(const RandomRegex& regex) {
        std::string text = print(regex);
        if (chance(10)) text = "^" + text;
        if (chance(10)) text += "$";
        return text;
    }

    // A member of the regex's language, drawn over the alphabet; nullopt when a class has no member there.
    std::optional<std::vector<uint32_t>> sample(const RandomRegex& regex, bool& special_from_class) {
        std::vector<uint32_t> out;
        if (!sample_into(regex, out, special_from_class)) return std::nullopt;
        return out;
    }

    std::vector<uint32_t> random_text() {
        std::vector<uint32_t> text;
        for (int length = pick(0, 5); length > 0; --length) text.push_back(random_char());
        return text;
    }

    std::vector<uint32_t> mutate(std::vector<uint32_t> text) {
        const size_t at = static_cast<size_t>(pick(0, static_cast<int>(text.size())));
        const int operation = pick(0, 2);
        if (operation == 0 && at < text.size()) {
            text.erase(text.begin() + static_cast<long>(at));
        } else if (operation == 1 && at < text.size()) {
            text[at] = random_char();
        } else {
            text.insert(text.begin() + static_cast<long>(at), random_char());
        }
        return text;
    }

private:
    int pick(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }
    bool chance(int percent) { return pick(0, 99) < percent; }
    uint32_t random_char() { return alphabet_[static_cast<size_t>(pick(0, static_cast<int>(alphabet_.size()) - 1))]; }

    RandomRegex leaf() {
        RandomRegex leaf;
        const int choice = pick(0, 19);
        if (choice < 10) {
            leaf.kind = RandomRegex::Kind::kLiteral;
            leaf.code_point = random_char();
        } else if (choice < 17 || json_safe_) {
            leaf.kind = RandomRegex::Kind::kClass;
            leaf.negated = !json_safe_ && chance(30);
            for (int item_idx = pick(1, 3); item_idx > 0; --item_idx) leaf.items.push_back(class_item());
        } else {
            leaf.kind = RandomRegex::Kind::kDot;
        }
        return leaf;
    }

    ClassItem class_item() {
        static constexpr char kShorthands[] = "dwsDWS";
        const int choice = pick(0, 9);
        if (choice < 2) return {0, 0, kShorthands[pick(0, json_safe_ ? 1 : 5)]};
        uint32_t first = random_char();
        uint32_t last = choice < 5 ? random_char() : first;
        if (last < first) std::swap(first, last);
        // A range between two safe characters may still hold " or \ (0x22, 0x5C).
        if (json_safe_ && first <= '\\' && last >= '"') last = first;
        return {first, last, 0};
    }

    RandomRegex optional(RandomRegex item) {
        RandomRegex repeat;
        repeat.kind = RandomRegex::Kind::kRepeat;
        repeat.children.push_back(std::move(item));
        repeat.min = 0;
        repeat.max = chance(50) ? 1 : kUnbounded;
        repeat.quantifier = repeat.max == 1 ? "?" : "*";
        return repeat;
    }

    void choose_quantifier(RandomRegex& repeat) {
        const int choice = pick(0, 5);
        const uint32_t low = static_cast<uint32_t>(pick(0, 3));
        const uint32_t high = low + static_cast<uint32_t>(pick(0, 2));
        const std::vector<std::pair<uint32_t, uint32_t>> bounds = {{0, kUnbounded}, {1, kUnbounded},   {0, 1},
                                                                   {low, low},      {low, kUnbounded}, {low, high}};
        const std::vector<std::string> spellings = {"*",
                                                    "+",
                                                    "?",
                                                    "{" + std::to_string(low) + "}",
                                                    "{" + std::to_string(low) + ",}",
                                                    "{" + std::to_string(low) + "," + std::to_string(high) + "}"};
        std::tie(repeat.min, repeat.max) = bounds[static_cast<size_t>(choice)];
        repeat.quantifier = spellings[static_cast<size_t>(choice)] + (chance(20) ? "?" : "");
    }

    std::string group(const std::string& body) {
        const std::string name = "g" + std::to_string(next_group_id_++);  // PCRE2 refuses duplicate names
        switch (pick(0, 4)) {
            case 0: return "(" + body + ")";
            case 1: return "(?:" + body + ")";
            case 2: return "(?<" + name + ">" + body + ")";
            case 3: return "(?P<" + name + ">" + body + ")";
            default: return "(?'" + name + "'" + body + ")";
        }
    }

    // One code point, spelled one of the ways both PCRE2 and the converter read the same.
    std::string print_char(uint32_t cp, bool in_class) {
        const bool alnum = (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
        if (alnum || cp == '_' || cp == ' ') return utf8({cp});
        char hex[16];
        std::snprintf(hex, sizeof(hex), chance(50) ? "\\x{%X}" : "\\x{%x}", static_cast<unsigned>(cp));
        if (cp >= 0x80) return chance(50) ? utf8({cp}) : hex;
        if (cp < 0x20) {
            if (cp == '\n' && chance(50)) return "\\n";
            if (cp == '\t' && chance(50)) return "\\t";
            char two_digits[8];
            std::snprintf(two_digits, sizeof(two_digits), "\\x%02x", static_cast<unsigned>(cp));
            return chance(50) ? hex : two_digits;
        }
        static const std::string kMeta = "\\^$.|?*+()[]{}";
        static const std::string kClassMeta = "\\]^-[";
        const bool must_escape = (in_class ? kClassMeta : kMeta).find(static_cast<char>(cp)) != std::string::npos;
        if (must_escape || chance(30)) return std::string{'\\', static_cast<char>(cp)};
        return utf8({cp});
    }

    std::string print_class(const RandomRegex& node) {
        if (node.kind == RandomRegex::Kind::kDot) return ".";
        std::string text = node.negated ? "[^" : "[";
        for (const ClassItem& item : node.items) {
            if (item.shorthand) {
                text += std::string{'\\', item.shorthand};
            } else {
                text += print_char(item.first, true);
                if (item.last != item.first) text += "-" + print_char(item.last, true);
            }
        }
        return text + "]";
    }

    bool is_atom(const RandomRegex& node) const {
        return node.kind == RandomRegex::Kind::kLiteral || node.kind == RandomRegex::Kind::kClass ||
               node.kind == RandomRegex::Kind::kDot;
    }

    std::string print(const RandomRegex& node) {
        std::string text;
        switch (node.kind) {
            case RandomRegex::Kind::kLiteral: text = print_char(node.code_point, false); break;
            case RandomRegex::Kind::kClass:
            case RandomRegex::Kind::kDot: text = print_class(node); break;
            case RandomRegex::Kind::kConcat:
                for (const RandomRegex& child : node.children) {
                    const std::string part = print(child);
                    text += child.kind == RandomRegex::Kind::kAlternation ? group(part) : part;
                }
                break;
            case RandomRegex::Kind::kAlternation:
                for (size_t child_idx = 0; child_idx < node.children.size(); ++child_idx) {
                    text += (child_idx == 0 ? "" : "|") + print(node.children[child_idx]);
                }
                break;
            case RandomRegex::Kind::kRepeat: {
                const RandomRegex& item = node.children[0];
                const std::string body = print(item);
                text = (is_atom(item) ? body : group(body)) + node.quantifier;
                break;
            }
        }
        return chance(8) ? group(text) : text;
    }

    bool sample_into(const RandomRegex& node, std::vector<uint32_t>& out, bool& special_from_class) {
        switch (node.kind) {
            case RandomRegex::Kind::kLiteral: out.push_back(node.code_point); return true;
            case RandomRegex::Kind::kClass:
            case RandomRegex::Kind::kDot: {
                std::vector<uint32_t> members;
                for (uint32_t cp : alphabet_) {
                    if (class_contains(node, cp)) members.push_back(cp);
                }
                if (members.empty()) return false;
                out.push_back(members[static_cast<size_t>(pick(0, static_cast<int>(members.size()) - 1))]);
                special_from_class = special_from_class || is_json_special(out.back());
                return true;
            }
            case RandomRegex::Kind::kConcat:
                for (const RandomRegex& child : node.children) {
                    if (!sample_into(child, out, special_from_class)) return false;
                }
                return true;
            case RandomRegex::Kind::kAlternation:
                return sample_into(
                    node.children[static_cast<size_t>(pick(0, static_cast<int>(node.children.size()) - 1))], out,
                    special_from_class);
            case RandomRegex::Kind::kRepeat: {
                const uint32_t high = node.max == kUnbounded ? node.min + 3 : node.max;
                for (int copy_idx = pick(static_cast<int>(node.min), static_cast<int>(high)); copy_idx > 0;
                     --copy_idx) {
                    if (!sample_into(node.children[0], out, special_from_class)) return false;
                }
                return true;
            }
        }
        return false;
    }

    std::mt19937 rng_;
    bool json_safe_;
    const std::vector<uint32_t>& alphabet_;
    int next_group_id_ = 0;
};

// PCRE2 with the whole subject as the match: anchored at both ends.
class Pcre2Oracle {
public:
    explicit Pcre2Oracle(const std::string& pattern) {
        int error_code = 0;
        PCRE2_SIZE error_offset = 0;
        code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED, &error_code, &error_offset, nullptr);
        if (code_ == nullptr) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error_code, message, sizeof(message));
            error_ = reinterpret_cast<const char*>(message) + std::string(" at ") + std::to_string(error_offset);
            return;
        }
        match_data_ = pcre2_match_data_create_from_pattern(code_, nullptr);
    }
    ~Pcre2Oracle() {
        pcre2_match_data_free(match_data_);
        pcre2_code_free(code_);
    }
    Pcre2Oracle(const Pcre2Oracle&) = delete;
    Pcre2Oracle& operator=(const Pcre2Oracle&) = delete;

    const std::string& error() const { return error_; }

    // Backtracking first (PCRE2's own semantics); nested quantifiers can hit its match limit, and then the DFA
    // matcher, which has no backtracking to run out of, decides (the same language without backreferences).
    bool full_match(const std::string& text) const {
        const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
        int result = pcre2_match(code_, subject, text.size(), 0, 0, match_data_, nullptr);
        if (result == PCRE2_ERROR_MATCHLIMIT || result == PCRE2_ERROR_DEPTHLIMIT) {
            std::vector<int> workspace(20000);
            result = pcre2_dfa_match(code_, subject, text.size(), 0, 0, match_data_, nullptr, workspace.data(),
                                     workspace.size());
        }
        EXPECT_TRUE(result >= 0 || result == PCRE2_ERROR_NOMATCH) << "pcre2 match failed: " << result;
        return result >= 0;
    }

private:
    pcre2_code* code_ = nullptr;
    pcre2_match_data* match_data_ = nullptr;
    std::string error_;
};

struct Candidate {
    std::vector<uint32_t> code_points;
    bool sampled_without_class_specials = false;  // drawn from the regex with no JSON-escaped character from a class
};

std::vector<Candidate> candidates_for(RegexGenerator& generator, const RandomRegex& regex) {
    std::vector<Candidate> candidates;
    for (int sample_idx = 0; sample_idx < 8; ++sample_idx) {
        bool special_from_class = false;
        std::optional<std::vector<uint32_t>> sample = generator.sample(regex, special_from_class);
        if (!sample) continue;
        candidates.push_back({generator.mutate(*sample), false});
        candidates.push_back({generator.mutate(generator.mutate(*sample)), false});
        candidates.push_back({std::move(*sample), !special_from_class});
    }
    for (int random_idx = 0; random_idx < 12; ++random_idx) candidates.push_back({generator.random_text(), false});
    return candidates;
}

std::optional<Grammar> grammar_for(const std::string& gbnf, const std::string& pattern) {
    Result<Grammar> grammar = parse_gbnf(gbnf);
    if (grammar.is_ok()) return std::move(grammar).value();
    ADD_FAILURE() << "pattern " << printable(pattern)
                  << " gave GBNF that does not parse: " << grammar.status().message() << "\n"
                  << gbnf;
    return std::nullopt;
}

struct Counts {
    int num_patterns = 0;
    int num_strings = 0;
    int num_matched = 0;
};

void check_plain_mode(const std::string& pattern, const Pcre2Oracle& oracle, const std::vector<Candidate>& candidates,
                      Counts& counts) {
    Result<std::string> gbnf = regex_to_gbnf(pattern, "root");
    if (!gbnf.is_ok()) {
        // Only an empty language may be refused (e.g. [^\d\D]); then PCRE2 must match nothing either.
        EXPECT_EQ(gbnf.status().message(), "regex: the pattern matches no string") << printable(pattern);
        for (const Candidate& candidate : candidates) EXPECT_FALSE(oracle.full_match(utf8(candidate.code_points)));
        return;
    }
    const std::optional<Grammar> grammar = grammar_for(gbnf.value(), pattern);
    if (!grammar) return;
    ++counts.num_patterns;
    for (const Candidate& candidate : candidates) {
        const std::string text = utf8(candidate.code_points);
        const bool expected = oracle.full_match(text);
        counts.num_strings += 1;
        counts.num_matched += expected ? 1 : 0;
        EXPECT_EQ(matches(*grammar, text), expected)
            << "pattern " << printable(pattern) << "\ntext " << printable(text) << "\nGBNF:\n"
            << gbnf.value();
    }
}

// json_string mode: what the grammar accepts is valid JSON string content whose value PCRE2 matches; text without
// escaped characters is judged as in plain mode; a member whose escaped characters all come from literals is kept.
void check_json_mode(const std::string& pattern, const Pcre2Oracle& oracle, const std::vector<Candidate>& candidates) {
    Result<std::string> gbnf = regex_to_gbnf(pattern, "root", {.json_string = true});
    if (!gbnf.is_ok()) return;  // an empty language, as checked in plain mode or caused by leaving specials out
    const std::optional<Grammar> grammar = grammar_for(gbnf.value(), pattern);
    if (!grammar) return;
    for (const Candidate& candidate : candidates) {
        const std::string raw = utf8(candidate.code_points);
        const std::string escaped = json_escape(candidate.code_points);
        for (const std::string& text : {raw, escaped}) {
            if (!matches(*grammar, text)) continue;
            const nlohmann::json value = nlohmann::json::parse("\"" + text + "\"", nullptr, false);
            ASSERT_TRUE(value.is_string()) << printable(pattern) << " accepted invalid JSON " << printable(text);
            EXPECT_TRUE(oracle.full_match(value.get<std::string>()))
                << "pattern " << printable(pattern) << " accepted " << printable(text) << "\nGBNF:\n"
                << gbnf.value();
        }
        if (raw == escaped) {
            EXPECT_EQ(matches(*grammar, raw), oracle.full_match(raw)) << printable(pattern) << " " << printable(raw);
        }
        if (candidate.sampled_without_class_specials) {
            EXPECT_TRUE(matches(*grammar, escaped))
                << printable(pattern) << " refused " << printable(escaped) << "\nGBNF:\n"
                << gbnf.value();
        }
    }
}

TEST(RegexRandom, GrammarAcceptsExactlyWhatPcre2MatchesWhole) {
    constexpr int kNumPatterns = 800;
    RegexGenerator generator(/*seed=*/20240611, /*json_safe=*/false);
    Counts counts;
    for (int pattern_idx = 0; pattern_idx < kNumPatterns && !HasFailure(); ++pattern_idx) {
        const RandomRegex regex = generator.node(pattern_idx % 4 + 1);
        const std::string pattern = generator.pattern(regex);
        const Pcre2Oracle oracle(pattern);
        ASSERT_TRUE(oracle.error().empty()) << "the generator wrote " << printable(pattern) << ": " << oracle.error();
        const std::vector<Candidate> candidates = candidates_for(generator, regex);
        check_plain_mode(pattern, oracle, candidates, counts);
        check_json_mode(pattern, oracle, candidates);
    }
    // The candidates must exercise both answers, or the comparison proves little.
    EXPECT_GT(counts.num_patterns, kNumPatterns * 9 / 10);
    EXPECT_GT(counts.num_matched, counts.num_strings / 5);
    EXPECT_GT(counts.num_strings - counts.num_matched, counts.num_strings / 5);
}

TEST(RegexRandom, JsonStringModeChangesNothingForSafePatterns) {
    RegexGenerator generator(/*seed=*/7, /*json_safe=*/true);
    for (int pattern_idx = 0; pattern_idx < 200; ++pattern_idx) {
        const std::string pattern = generator.pattern(generator.node(pattern_idx % 4 + 1));
        Result<std::string> plain = regex_to_gbnf(pattern, "root");
        Result<std::string> json = regex_to_gbnf(pattern, "root", {.json_string = true});
        ASSERT_TRUE(plain.is_ok() && json.is_ok()) << printable(pattern);
        EXPECT_EQ(json.value(), plain.value()) << printable(pattern);
    }
}

}  // namespace
}  // namespace tern::grammar
