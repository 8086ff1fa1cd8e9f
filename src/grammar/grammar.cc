#include "grammar/grammar.h"

#include <algorithm>
#include <map>

namespace tern::grammar {

uint32_t GrammarBuilder::rule_id(const std::string& name) {
    const auto [it, inserted] = ids_.try_emplace(name, static_cast<uint32_t>(names_.size()));
    if (inserted) {
        names_.push_back(name);
        alternatives_.emplace_back();
        defined_.push_back(false);
    }
    return it->second;
}

uint32_t GrammarBuilder::fresh_rule(const std::string& base) {
    for (size_t n = names_.size();; ++n) {
        const std::string name = base + "#" + std::to_string(n);  // `#` cannot appear in a written rule name
        if (!ids_.count(name)) {
            const uint32_t id = rule_id(name);
            defined_[id] = true;
            return id;
        }
    }
}

void GrammarBuilder::add_alternative(uint32_t rule, Sequence sequence) {
    alternatives_[rule].push_back(std::move(sequence));
    defined_[rule] = true;
}

Status GrammarBuilder::check_defined(uint32_t root) const {
    if (!defined_[root]) return invalid_argument("grammar: the root rule '" + names_[root] + "' is not defined");
    for (size_t rule = 0; rule < names_.size(); ++rule) {
        for (const Sequence& sequence : alternatives_[rule]) {
            for (const Element& element : sequence) {
                if (element.is_rule && !defined_[element.rule]) {
                    return invalid_argument("grammar: rule '" + names_[element.rule] + "' is used by '" +
                                            names_[rule] + "' but not defined");
                }
            }
        }
    }
    return Status::ok();
}

namespace {

std::vector<bool> nullable_rules(const std::vector<std::vector<Sequence>>& alternatives) {
    std::vector<bool> nullable(alternatives.size(), false);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t rule = 0; rule < alternatives.size(); ++rule) {
            if (nullable[rule]) continue;
            for (const Sequence& sequence : alternatives[rule]) {
                const bool empty = std::all_of(sequence.begin(), sequence.end(),
                                               [&](const Element& e) {
                                                   return e.is_rule && (nullable[e.rule] || (e.counted && e.min == 0));
                                               });
                if (empty) {
                    nullable[rule] = changed = true;
                    break;
                }
            }
        }
    }
    return nullable;
}

}  // namespace

// A rule repeated by a counted position is referred to there through a twin of its own, one per rule, shared by
// all its counted repetitions: the token masks compile a rule referred to only by counted repetitions once for all
// of them, and a rule also used elsewhere (a JSON string's character, in strings with and without maxLength) would
// not be.
void GrammarBuilder::twin_counted_rules(std::vector<std::string>& names,
                                        std::vector<std::vector<Sequence>>& alternatives) const {
    std::map<uint32_t, uint32_t> twin;
    const size_t first_twin = names.size();  // rules from here on are twins
    for (size_t rule = 0; rule < alternatives.size(); ++rule) {  // twins added on the way are visited too
        for (size_t a = 0; a < alternatives[rule].size(); ++a) {
            for (size_t e = 0; e < alternatives[rule][a].size(); ++e) {
                Element& element = alternatives[rule][a][e];
                if (!element.counted || element.rule >= first_twin) continue;
                auto [it, inserted] = twin.try_emplace(element.rule, static_cast<uint32_t>(names.size()));
                if (inserted) {
                    names.push_back(names[element.rule] + "#counted");
                    alternatives.push_back(alternatives[element.rule]);
                }
                alternatives[rule][a][e].rule = it->second;  // `element` may dangle: push_back above
            }
        }
    }
}

Result<Grammar> GrammarBuilder::build(const std::string& root) const {
    const auto root_it = ids_.find(root);
    if (root_it == ids_.end()) return invalid_argument("grammar: no rule named '" + root + "' (the start rule)");
    TERN_RETURN_IF_ERROR(check_defined(root_it->second));
    std::vector<std::string> names = names_;
    std::vector<std::vector<Sequence>> alternatives = alternatives_;
    twin_counted_rules(names, alternatives);
    // Root first; the other rules keep their order.
    std::vector<uint32_t> new_id(names.size());
    std::vector<uint32_t> order{root_it->second};
    for (uint32_t rule = 0; rule < names.size(); ++rule) {
        if (rule != root_it->second) order.push_back(rule);
    }
    for (uint32_t i = 0; i < order.size(); ++i) new_id[order[i]] = i;

    Grammar grammar;
    const std::vector<bool> nullable = nullable_rules(alternatives);
    for (uint32_t old : order) grammar.nullable_.push_back(nullable[old]);
    std::map<std::string, uint32_t> set_index;  // identical byte sets are stored once
    for (uint32_t old : order) {
        Rule rule{names[old], {}};
        for (const Sequence& sequence : alternatives[old]) {
            grammar.rule_of_position_.resize(grammar.positions_.size() + sequence.size() + 1, new_id[old]);
            rule.alternatives.push_back(static_cast<uint32_t>(grammar.positions_.size()));
            for (const Element& element : sequence) {
                if (element.is_rule && element.counted) {
                    grammar.positions_.push_back({Position::kRepeat, new_id[element.rule], element.min, element.max});
                    continue;
                }
                if (element.is_rule) {
                    grammar.positions_.push_back({Position::kRule, new_id[element.rule]});
                    continue;
                }
                const auto [it, inserted] =
                    set_index.try_emplace(element.bytes.to_string(), static_cast<uint32_t>(grammar.byte_sets_.size()));
                if (inserted) grammar.byte_sets_.push_back(element.bytes);
                grammar.positions_.push_back({Position::kBytes, it->second});
            }
            grammar.positions_.push_back({Position::kEnd, 0});
        }
        grammar.rules_.push_back(std::move(rule));
    }
    return grammar;
}

namespace {

void append_byte(std::string& out, int byte) {
    static const char* hex = "0123456789ABCDEF";
    if (byte >= 0x21 && byte < 0x7F && byte != '\\' && byte != ']' && byte != '-' && byte != '"' && byte != '^') {
        out += static_cast<char>(byte);
    } else {
        out += "\\x";
        out += hex[byte >> 4];
        out += hex[byte & 15];
    }
}

std::string set_to_string(const ByteSet& set) {
    if (set.count() == 1) {
        for (int b = 0; b < 256; ++b) {
            if (set[b]) {
                std::string out = "[";
                append_byte(out, b);
                return out + "]";
            }
        }
    }
    std::string out = "[";
    for (int b = 0; b < 256;) {
        if (!set[b]) {
            ++b;
            continue;
        }
        int end = b;
        while (end + 1 < 256 && set[end + 1]) ++end;
        append_byte(out, b);
        if (end > b) {
            out += '-';
            append_byte(out, end);
        }
        b = end + 1;
    }
    return out + "]";
}

}  // namespace

std::string Grammar::to_string() const {
    std::string out;
    for (const Rule& rule : rules_) {
        out += rule.name + " ::=";
        for (size_t a = 0; a < rule.alternatives.size(); ++a) {
            if (a > 0) out += " |";
            for (uint32_t p = rule.alternatives[a]; positions_[p].kind != Position::kEnd; ++p) {
                out += ' ';
                const Position& at = positions_[p];
                out += at.kind == Position::kBytes ? set_to_string(byte_sets_[at.index]) : rules_[at.index].name;
                if (at.kind == Position::kRepeat) {
                    out += "{" + std::to_string(at.min) + "," + std::to_string(at.max) + "}";
                }
            }
        }
        out += '\n';
    }
    return out;
}

}  // namespace tern::grammar
