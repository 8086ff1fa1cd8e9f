#include "route/balancer.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>

namespace tern::route {
namespace {

bool eligible(const ReplicaView& replica) { return replica.healthy && !replica.excluded; }

// The eligible replica minimising `cost`; ties go to the lowest index.
template <typename Cost>
std::optional<size_t> argmin(const std::vector<ReplicaView>& replicas, Cost cost) {
    std::optional<size_t> best;
    double best_cost = 0;
    for (size_t idx = 0; idx < replicas.size(); ++idx) {
        if (!eligible(replicas[idx])) continue;
        const double value = cost(replicas[idx]);
        if (!best || value < best_cost) {
            best = idx;
            best_cost = value;
        }
    }
    return best;
}

std::optional<size_t> pick_round_robin(const std::vector<ReplicaView>& replicas, uint64_t counter) {
    if (replicas.empty()) return std::nullopt;
    for (size_t step = 0; step < replicas.size(); ++step) {
        const size_t idx = (counter + step) % replicas.size();
        if (eligible(replicas[idx])) return idx;
    }
    return std::nullopt;
}

std::optional<size_t> pick_affinity(const std::vector<ReplicaView>& replicas, std::string_view key) {
    int total = 0;
    int eligible_count = 0;
    for (const ReplicaView& replica : replicas) {
        if (!eligible(replica)) continue;
        total += replica.outstanding;
        ++eligible_count;
    }
    if (eligible_count == 0) return std::nullopt;
    const double bound = std::ceil(kAffinityLoadBound * (total + 1) / eligible_count);
    std::vector<std::pair<uint64_t, size_t>> order;
    for (size_t idx = 0; idx < replicas.size(); ++idx) {
        if (eligible(replicas[idx])) order.emplace_back(rendezvous_weight(key, replicas[idx].identity), idx);
    }
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [weight, idx] : order) {
        if (replicas[idx].outstanding + 1 <= bound) return idx;
    }
    return order.front().second;  // unreachable: the least loaded replica is always under the bound
}

}  // namespace

double load_score(const ReplicaView& replica) {
    if (replica.waiting < 0) return replica.outstanding;
    const double sent_since = std::max(0, replica.outstanding - replica.outstanding_at_scrape);
    const double kv = std::max(0.0, replica.kv_usage);
    return replica.waiting + sent_since + 2.0 * kv + 0.01 * replica.outstanding;
}

uint64_t rendezvous_weight(std::string_view key, uint64_t identity) {
    return XXH3_64bits_withSeed(key.data(), key.size(), identity);
}

std::optional<size_t> pick_replica(const std::vector<ReplicaView>& replicas, BalancePolicy policy,
                                   std::string_view affinity_key, uint64_t round_robin) {
    switch (policy) {
        case BalancePolicy::kRoundRobin: return pick_round_robin(replicas, round_robin);
        case BalancePolicy::kPrefixAffinity:
            return pick_affinity(replicas, affinity_key.substr(0, kAffinityPrefixBytes));
        case BalancePolicy::kLoadAware: return argmin(replicas, load_score);
        case BalancePolicy::kLeastOutstanding:
            return argmin(replicas, [](const ReplicaView& replica) { return replica.outstanding; });
    }
    return std::nullopt;
}

}  // namespace tern::route
