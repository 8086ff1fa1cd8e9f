// How far a parse is from a complete sentence: the fewest bytes that finish it. What lets a request with a
// max_tokens budget end inside it: the engine steers a model that has wandered off (a random one keeps opening
// strings and arrays) along a shortest completion once the budget gets tight (engine/engine.cc).
#pragma once

#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "grammar/matcher.h"

namespace tern::grammar {

inline constexpr uint32_t kNoCompletion = std::numeric_limits<uint32_t>::max();

// Per grammar: the shortest text of each rule, and the shortest rest of each alternative from each position.
class DistanceTables {
public:
    explicit DistanceTables(const Grammar& grammar);
    uint32_t rest(uint32_t position) const { return rest_[position]; }
    uint32_t min_length(uint32_t rule) const { return min_length_[rule]; }
    // The fewest bytes from `caller`'s alternative once the rule it waits for completes (a repetition may need
    // more of it first).
    uint32_t rest_after_completing(const Grammar& grammar, const Item& caller) const;

private:
    std::vector<uint32_t> min_length_;
    std::vector<uint32_t> rest_;
};

// The fewest bytes from a chart's last set to a complete sentence (0: it may end now; kNoCompletion: none).
// A rule that completes returns into the items that wait for it in the set where it began, so the distance is the
// rest of the current alternative plus the distance "after the rule completes from that set", which depends only on
// that set and older ones: solved set by set (a shortest-path relaxation over the set's rules, since items begun in
// the set wait on each other), and kept for the sets before `stable_sets` (a token walk truncates and rebuilds only
// the sets after its base).
class CompletionDistance {
public:
    explicit CompletionDistance(const DistanceTables& tables) : tables_(&tables) {}
    uint32_t to_end(const Chart& chart, size_t stable_sets);
    // Drops what was kept: the chart went back past some of the sets it was kept for.
    void forget() { stable_.clear(); }

private:
    using RuleDistances = std::unordered_map<uint32_t, uint32_t>;  // rule -> fewest bytes after it completes
    const RuleDistances& after_rules(const Chart& chart, uint32_t set, size_t stable_sets);
    uint32_t after_rule(const Chart& chart, uint32_t set, uint32_t rule, size_t stable_sets);

    const DistanceTables* tables_;
    std::unordered_map<uint32_t, RuleDistances> stable_;   // by set, for sets < stable_sets
    std::unordered_map<uint32_t, RuleDistances> current_;  // the newer sets, cleared each call
};

}  // namespace tern::grammar
