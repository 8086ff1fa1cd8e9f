// Random regular expressions and choice lists (random_constraints.h). Only syntax that the three readers agree on:
// ECMAScript with the `u` flag refuses identity escapes of letters and lone braces, so only syntax characters are
// escaped; PCRE2-only spellings (\x{...}, POSIX classes, possessive quantifiers) are left out.
#include <algorithm>
#include <array>
#include <string_view>

#include "random_constraints.h"

namespace tern::testing {
namespace {

int uniform(std::mt19937_64& rng, int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng); }
bool chance(std::mt19937_64& rng, double probability) { return std::bernoulli_distribution(probability)(rng); }
template <typename T, size_t N>
const T& pick(std::mt19937_64& rng, const std::array<T, N>& options) {
    return options[static_cast<size_t>(uniform(rng, 0, static_cast<int>(N) - 1))];
}

// Literal characters, a quote among them (a pattern inside a JSON string must come out escaped) and non-ASCII ones.
constexpr std::array<std::string_view, 16> kLiterals = {"a", "b", "c", "x", "y", "z",  "0", "1",
                                                        "7", "-", "_", " ", "@", "\"", "é", "日"};
constexpr std::array<std::string_view, 10> kEscaped = {"\\.", "\\+", "\\*", "\\?", "\\(",
                                                       "\\)", "\\[", "\\{", "\\|", "\\\\"};
constexpr std::array<std::string_view, 10> kClasses = {"[a-z]", "[0-9]",   "[A-Fa-f0-9]", "[xyz_]", "[^a-z]",
                                                       "[^\"]", "[a\\-z]", "[α-ω]",       "[\\d.]", "[^\\\\0-9]"};
constexpr std::array<std::string_view, 5> kShorthands = {"\\d", "\\w", "\\s", "\\D", "."};

// "{min}", "{min,}" (max -1) or "{min,max}". Strings here are appended piece by piece: GCC 12 at -O3 warns
// (-Wrestrict, a false positive) on "literal" + std::string and on assigning a literal.
std::string braces(int min, int max) {
    std::string text = "{";
    text += std::to_string(min);
    if (max != min) text += ",";
    if (max > min) text += std::to_string(max);
    text += "}";
    return text;
}

// Inside a group only bounded quantifiers: an unbounded one in a repeated group, such as (\D+)*, is ambiguous in a
// way that makes the matcher's sets grow with the text, and masks then take seconds a step (reported with #18's
// property test); this test is about what is matched, not how fast.
std::string greedy_quantifier(std::mt19937_64& rng, int depth) {
    switch (uniform(rng, depth == 0 ? 0 : 3, 9)) {
        case 0: return "?";
        case 1: return "*";
        case 2: return "+";
        case 3: {
            const int count = uniform(rng, 1, 3);
            return braces(count, count);
        }
        case 4: {
            const int min = uniform(rng, 0, 2);
            return braces(min, min + uniform(rng, 0, 3));
        }
        case 5: return depth == 0 ? braces(uniform(rng, 0, 2), -1) : "?";
        default: return "";  // most atoms stand alone
    }
}

std::string quantifier(std::mt19937_64& rng, int depth) {
    std::string text = greedy_quantifier(rng, depth);
    if (!text.empty() && chance(rng, 0.15)) text += "?";  // lazy: the same language
    return text;
}

std::string alternation(std::mt19937_64& rng, int depth);

std::string atom(std::mt19937_64& rng, int depth) {
    const int kind = uniform(rng, 0, 19);
    if (kind < 8) return std::string(pick(rng, kLiterals));
    if (kind < 9) return std::string(pick(rng, kEscaped));
    if (kind < 13) return std::string(pick(rng, kClasses));
    if (kind < 16 || depth >= 2) return std::string(pick(rng, kShorthands));
    const std::string inner = alternation(rng, depth + 1);
    std::string group = chance(rng, 0.5) ? "(?:" : "(";
    group += inner;
    group += ")";
    return group;
}

std::string sequence(std::mt19937_64& rng, int depth) {
    std::string text;
    const int num_atoms = uniform(rng, depth == 0 ? 1 : 0, 4);
    for (int atom_idx = 0; atom_idx < num_atoms; ++atom_idx) {
        text += atom(rng, depth);
        text += quantifier(rng, depth);
    }
    return text;
}

std::string alternation(std::mt19937_64& rng, int depth) {
    std::string text = sequence(rng, depth);
    while (chance(rng, depth == 0 ? 0.3 : 0.25)) {
        text += "|";
        text += sequence(rng, depth);
    }
    return text;
}

}  // namespace

std::string random_regex(std::mt19937_64& rng) {
    const std::string body = alternation(rng, 0);
    if (!chance(rng, 0.3)) return body;
    std::string anchored = "^(?:";
    anchored += body;
    anchored += ")$";
    return anchored;
}

std::vector<std::string> random_choices(uint64_t seed) {
    std::mt19937_64 rng(seed);
    constexpr std::array<std::string_view, 14> kPool = {"a",         "ab",       "abc",    "yes",      "no",
                                                        "maybe",     "positive", "posit",  "négatif",  "日本語",
                                                        "two words", "quote\"s", "back\\", "tab\there"};
    std::vector<std::string> choices;
    const int num_choices = uniform(rng, 2, 5);
    while (static_cast<int>(choices.size()) < num_choices) {
        std::string choice(pick(rng, kPool));
        if (chance(rng, 0.3)) {  // a fresh word, so that choices are not always the pool's
            choice.clear();
            for (int length = uniform(rng, 1, 6); length > 0; --length) {
                choice += static_cast<char>('a' + uniform(rng, 0, 25));
            }
        }
        if (std::find(choices.begin(), choices.end(), choice) == choices.end()) choices.push_back(choice);
    }
    return choices;
}

}  // namespace tern::testing
