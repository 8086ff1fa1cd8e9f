// Choosing a replica for a request: pure functions over a snapshot of the pool, so that the policies are tested
// without sockets (tests/route/balancer_test.cc compares them against simple models on random pools).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "route/config.h"

namespace tern::route {

// What the balancer sees of one replica.
struct ReplicaView {
    bool healthy = true;
    bool excluded = false;         // already tried for this request (a retry goes elsewhere)
    int outstanding = 0;           // requests in flight through this router
    // From the replica's /metrics (load-aware pools); negative when not scraped (yet).
    double waiting = -1;           // requests queued on the replica
    double kv_usage = -1;          // 0..1
    int outstanding_at_scrape = 0; // `outstanding` when the figures above were read
    uint64_t identity = 0;         // a stable hash of the replica's URL (prefix affinity)
};

// Bounded-load consistent hashing (Mirrokni, Thorup and Zadimoghaddam, 2018): a replica takes an affinity request
// only while its load is at most this factor times the pool's mean (plus one), so a hot prefix spills over instead
// of piling onto one replica.
inline constexpr double kAffinityLoadBound = 1.25;

// How many bytes of the prompt's start decide the prefix affinity: about the first 64 tokens, enough to tell system
// prompts apart, short enough that the user's turn does not change the choice.
inline constexpr size_t kAffinityPrefixBytes = 256;

// The replica to send to, or nullopt when none is healthy and not excluded. `affinity_key` is the prompt's start
// (prefix affinity only); `round_robin` a counter the caller increments per request.
std::optional<size_t> pick_replica(const std::vector<ReplicaView>& replicas, BalancePolicy policy,
                                   std::string_view affinity_key, uint64_t round_robin);

// The load-aware score (lower is better): the replica's queue as last scraped plus what this router sent it since,
// then its KV use (a full cache counts as two queued requests: it will preempt or queue the next one), with the
// requests in flight as the tie-break. Without scraped figures, the requests in flight alone.
double load_score(const ReplicaView& replica);

// The rendezvous weight of `identity` for `key` (highest wins).
uint64_t rendezvous_weight(std::string_view key, uint64_t identity);

}  // namespace tern::route
