// The balancing policies on random pools, each against a plain model of what it must pick, and the canary split.
#include "route/balancer.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "route/routing.h"

namespace tern::route {
namespace {

std::vector<ReplicaView> random_pool(std::mt19937& random) {
    std::vector<ReplicaView> pool(1 + random() % 8);
    for (size_t idx = 0; idx < pool.size(); ++idx) {
        ReplicaView& view = pool[idx];
        view.healthy = random() % 5 != 0;
        view.excluded = random() % 7 == 0;
        view.outstanding = static_cast<int>(random() % 10);
        if (random() % 3 != 0) {
            view.waiting = random() % 6;
            view.kv_usage = (random() % 101) / 100.0;
            view.outstanding_at_scrape = static_cast<int>(random() % 10);
        }
        view.identity = 1000 + idx;
    }
    return pool;
}

bool eligible(const ReplicaView& view) { return view.healthy && !view.excluded; }

TEST(RouteBalancer, EveryPolicyPicksAnEligibleReplicaAsItsModelSays) {
    std::mt19937 random(7);
    for (int trial = 0; trial < 20000; ++trial) {
        const std::vector<ReplicaView> pool = random_pool(random);
        const bool any = std::any_of(pool.begin(), pool.end(), eligible);
        const std::string key = "prompt " + std::to_string(random() % 50);
        for (BalancePolicy policy : {BalancePolicy::kLeastOutstanding, BalancePolicy::kLoadAware,
                                     BalancePolicy::kPrefixAffinity, BalancePolicy::kRoundRobin}) {
            const uint64_t counter = random();
            const std::optional<size_t> pick = pick_replica(pool, policy, key, counter);
            ASSERT_EQ(pick.has_value(), any) << to_string(policy);
            if (!pick) continue;
            ASSERT_LT(*pick, pool.size());
            ASSERT_TRUE(eligible(pool[*pick])) << to_string(policy);
            // The model of each policy.
            for (size_t other = 0; other < pool.size(); ++other) {
                if (!eligible(pool[other])) continue;
                if (policy == BalancePolicy::kLeastOutstanding) {
                    ASSERT_LE(pool[*pick].outstanding, pool[other].outstanding);
                }
                if (policy == BalancePolicy::kLoadAware) {
                    ASSERT_LE(load_score(pool[*pick]), load_score(pool[other]));
                }
            }
            if (policy == BalancePolicy::kRoundRobin) {  // the first eligible one from counter % size on
                size_t expected = counter % pool.size();
                while (!eligible(pool[expected])) expected = (expected + 1) % pool.size();
                ASSERT_EQ(*pick, expected);
            }
            if (policy == BalancePolicy::kPrefixAffinity) {
                // Bounded load: the pick is under the bound, and every replica the key prefers more is over it.
                int total = 0, count = 0;
                for (const ReplicaView& view : pool) {
                    if (eligible(view)) {
                        total += view.outstanding;
                        ++count;
                    }
                }
                const double bound = std::ceil(kAffinityLoadBound * (total + 1) / count);
                ASSERT_LE(pool[*pick].outstanding + 1, bound);
                const uint64_t chosen_weight = rendezvous_weight(key, pool[*pick].identity);
                for (const ReplicaView& view : pool) {
                    if (eligible(view) && rendezvous_weight(key, view.identity) > chosen_weight) {
                        ASSERT_GT(view.outstanding + 1, bound);
                    }
                }
            }
        }
    }
}

TEST(RouteBalancer, LoadAwareCountsWhatWasSentSinceTheLastScrape) {
    std::vector<ReplicaView> pool(2);
    pool[0].waiting = 0, pool[0].kv_usage = 0.1, pool[0].outstanding = 5, pool[0].outstanding_at_scrape = 0;
    pool[1].waiting = 2, pool[1].kv_usage = 0.1, pool[1].outstanding = 0, pool[1].outstanding_at_scrape = 0;
    // Replica 0 looked idle at the scrape, but five requests went to it since: replica 1 (two queued) is less loaded.
    EXPECT_EQ(pick_replica(pool, BalancePolicy::kLoadAware, "", 0), std::optional<size_t>(1));
    pool[0].outstanding = 1;
    EXPECT_EQ(pick_replica(pool, BalancePolicy::kLoadAware, "", 0), std::optional<size_t>(0));
    pool[0].kv_usage = 1.0, pool[1].kv_usage = 0.0, pool[1].waiting = 0.5;  // a full KV cache weighs two queued
    EXPECT_EQ(pick_replica(pool, BalancePolicy::kLoadAware, "", 0), std::optional<size_t>(1));
}

TEST(RouteBalancer, PrefixAffinitySpreadsKeysAndKeepsEachOnItsReplica) {
    std::vector<ReplicaView> pool(4);
    for (size_t idx = 0; idx < pool.size(); ++idx) pool[idx].identity = 77 + idx * 13;
    std::map<size_t, int> hits;
    for (int key = 0; key < 4000; ++key) {
        const std::string text = "system prompt number " + std::to_string(key) + " and a user turn";
        const auto first = pick_replica(pool, BalancePolicy::kPrefixAffinity, text, 0);
        // Only the first kAffinityPrefixBytes decide: a different ending past them keeps the replica.
        const std::string longer = text + std::string(kAffinityPrefixBytes, 'x');
        const std::string other_ending = longer.substr(0, kAffinityPrefixBytes) + "another user turn";
        ASSERT_EQ(pick_replica(pool, BalancePolicy::kPrefixAffinity, longer, 0),
                  pick_replica(pool, BalancePolicy::kPrefixAffinity, other_ending, 0));
        ++hits[*first];
    }
    for (const auto& [replica, count] : hits) EXPECT_NEAR(count, 1000, 150) << "replica " << replica;
}

TEST(RouteCanary, AFivePercentVersionGetsFivePercentOfKeysAndEachKeyKeepsItsVersion) {
    ModelRoute model{.name = "llama", .versions = {{"stable", "a", 95}, {"next", "b", 5}}};
    int next = 0;
    std::map<std::string, std::string> first_choice;
    for (int request = 0; request < 10000; ++request) {
        const std::string key = "tenant-" + std::to_string(request % 2500);
        const ModelVersion& version = pick_version(model, key);
        if (version.name == "next") ++next;
        auto [it, inserted] = first_choice.emplace(key, version.name);
        ASSERT_EQ(it->second, version.name) << key;  // sticky
    }
    EXPECT_NEAR(next / 10000.0, 0.05, 0.01);
    model.versions[1].weight = 0;  // a rollback applies to the next request
    for (int key = 0; key < 1000; ++key) EXPECT_EQ(pick_version(model, "tenant-" + std::to_string(key)).name, "stable");
}

TEST(RouteRouting, TokensAreEstimatedAtFourBytesEach) {
    EXPECT_EQ(estimate_tokens(0), 0);
    EXPECT_EQ(estimate_tokens(1), 1);
    EXPECT_EQ(estimate_tokens(8000), 2000);
}

}  // namespace
}  // namespace tern::route
