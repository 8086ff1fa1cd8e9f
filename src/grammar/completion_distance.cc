#include "grammar/completion_distance.h"

#include <algorithm>

namespace tern::grammar {
namespace {

uint32_t add(uint32_t a, uint32_t b) { return a == kNoCompletion || b == kNoCompletion ? kNoCompletion : a + b; }

// `times` copies of something `length` bytes long (none: 0 bytes, even of something that cannot complete).
uint32_t times(uint32_t times, uint32_t length) {
    if (times == 0) return 0;
    if (length == kNoCompletion) return kNoCompletion;
    return static_cast<uint32_t>(std::min<uint64_t>(uint64_t{times} * length, kNoCompletion - 1));
}

}  // namespace

DistanceTables::DistanceTables(const Grammar& grammar)
    : min_length_(grammar.rules().size(), kNoCompletion), rest_(grammar.positions().size(), kNoCompletion) {
    // The rest of an alternative from its end backwards, until the rules' shortest lengths settle.
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t rule = 0; rule < grammar.rules().size(); ++rule) {
            for (uint32_t start : grammar.rules()[rule].alternatives) {
                uint32_t end = start;
                while (grammar.at(end).kind != Position::kEnd) ++end;
                rest_[end] = 0;
                for (uint32_t p = end; p-- > start;) {
                    const Position& at = grammar.at(p);
                    // An empty byte set matches nothing: no text gets past it.
                    // A byte set's index is into the byte sets, not the rules.
                    uint32_t element = at.kind == Position::kBytes ? (grammar.bytes_at(p).any() ? 1 : kNoCompletion)
                                                                   : min_length_[at.index];
                    if (at.kind == Position::kRepeat) element = times(at.min, element);
                    rest_[p] = add(element, rest_[p + 1]);
                }
                if (rest_[start] < min_length_[rule]) {
                    min_length_[rule] = rest_[start];
                    changed = true;
                }
            }
        }
    }
}

uint32_t DistanceTables::rest_after_completing(const Grammar& grammar, const Item& caller) const {
    const Position& at = grammar.at(caller.position);
    if (at.kind != Position::kRepeat) return rest_[caller.position + 1];
    if (caller.count >= at.max) return kNoCompletion;  // the rule cannot complete once more here
    const uint32_t more = at.min > caller.count + 1 ? at.min - caller.count - 1 : 0;
    return add(times(more, min_length_[at.index]), rest_[caller.position + 1]);
}

uint32_t CompletionDistance::after_rule(const Chart& chart, uint32_t set, uint32_t rule, size_t stable_sets) {
    const RuleDistances& distances = after_rules(chart, set, stable_sets);
    const auto found = distances.find(rule);
    return found == distances.end() ? kNoCompletion : found->second;
}

// For every rule some item of `set` waits for: the fewest bytes once it completes from `set`. Items begun in an
// older set give a fixed value (solved there first); items begun in this set depend on another rule of this set,
// relaxed until nothing shortens (every edge adds a non-negative rest, so it settles within the number of rules).
const CompletionDistance::RuleDistances& CompletionDistance::after_rules(const Chart& chart, uint32_t set,
                                                                        size_t stable_sets) {
    auto& memo = set < stable_sets ? stable_ : current_;
    if (auto found = memo.find(set); found != memo.end()) return found->second;
    const Grammar& grammar = chart.grammar();
    RuleDistances distances;
    if (set == 0) distances[0] = 0;  // the root, complete from the start
    struct Local {
        uint32_t rule, rest, caller_rule;
    };
    std::vector<Local> local;
    for (uint32_t index : chart.waiting_of(set)) {
        const Item& caller = chart.item(index);
        const uint32_t rule = grammar.at(caller.position).index;
        const uint32_t rest = tables_->rest_after_completing(grammar, caller);
        const uint32_t caller_rule = grammar.rule_of(caller.position);
        auto [entry, inserted] = distances.try_emplace(rule, kNoCompletion);
        if (caller.origin == set) {
            local.push_back({rule, rest, caller_rule});
        } else {
            entry->second = std::min(entry->second, add(rest, after_rule(chart, caller.origin, caller_rule, stable_sets)));
        }
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (const Local& edge : local) {
            const auto caller = distances.find(edge.caller_rule);
            if (caller == distances.end()) continue;
            const uint32_t through = add(edge.rest, caller->second);
            if (through < distances[edge.rule]) {
                distances[edge.rule] = through;
                changed = true;
            }
        }
    }
    return memo.emplace(set, std::move(distances)).first->second;
}

uint32_t CompletionDistance::to_end(const Chart& chart, size_t stable_sets) {
    current_.clear();
    if (chart.completed_from_start(0)) return 0;
    uint32_t best = kNoCompletion;
    for (const Item& item : chart.items_of(chart.sets() - 1)) {
        if (chart.grammar().at(item.position).kind != Position::kBytes) continue;
        const uint32_t rest = tables_->rest(item.position);
        if (rest >= best) continue;
        best = std::min(best, add(rest, after_rule(chart, item.origin, chart.grammar().rule_of(item.position),
                                                   stable_sets)));
    }
    return best;
}

}  // namespace tern::grammar
