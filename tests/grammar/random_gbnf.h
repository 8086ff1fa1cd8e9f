// Random GBNF grammars for the matcher's randomized tests: rules r0..rN referring to each other (recursion, left
// recursion and ambiguity included), groups, and every repetition operator. Each test picks its alphabet.
#pragma once

#include <random>
#include <string>
#include <vector>

namespace tern::grammar::testing {

struct RandomGbnfShape {
    std::vector<std::string> atoms;     // literals and classes
    std::vector<std::string> suffixes;  // repetition operators, "" for none
    int atom_share = 4;                 // out of 10 items: an atom below this, a rule reference below rule_share,
    int rule_share = 7;                 // else a group
    std::string deepest;                // the atom where groups may nest no deeper
    int max_rules = 4;
    int min_items = 0;  // items in an alternative: min_items + [0, item_span)
    int item_span = 4;
};

inline std::string random_item(std::mt19937& rng, const RandomGbnfShape& shape, int rules, int depth) {
    const int kind = static_cast<int>(rng() % 10);
    std::string item;
    if (kind < shape.atom_share) {
        item = shape.atoms[rng() % shape.atoms.size()];
    } else if (kind < shape.rule_share) {
        item = "r" + std::to_string(rng() % rules);
    } else if (depth < 2) {
        item = "(" + random_item(rng, shape, rules, depth + 1) + " " + random_item(rng, shape, rules, depth + 1) +
               " | " + random_item(rng, shape, rules, depth + 1) + ")";
    } else {
        item = shape.deepest;
    }
    return item + shape.suffixes[rng() % shape.suffixes.size()];
}

inline std::string random_grammar(std::mt19937& rng, const RandomGbnfShape& shape) {
    const int rules = 1 + static_cast<int>(rng() % shape.max_rules);
    std::string text = "root ::= r0\n";
    for (int r = 0; r < rules; ++r) {
        text += "r" + std::to_string(r) + " ::=";
        const int alternatives = 1 + static_cast<int>(rng() % 3);
        for (int a = 0; a < alternatives; ++a) {
            text += a ? " |" : "";
            const int items = shape.min_items + static_cast<int>(rng() % shape.item_span);
            for (int i = 0; i < items; ++i) text += " " + random_item(rng, shape, rules, 0);
        }
        text += "\n";
    }
    return text;
}

}  // namespace tern::grammar::testing
