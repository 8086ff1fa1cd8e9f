// Randomized add / extend / free sequences against KvManager. Every step checks the pool's invariants, that a
// failed allocation left no trace, and, through a model of what each block holds, that a prefix hit returns
// blocks holding exactly the hit tokens and that no shared block is ever written. Ends with no leaked block.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "kv/kv_manager.h"

namespace tern::kv {
namespace {

using Tokens = std::vector<TokenId>;

constexpr int kBlockSize = 4;
constexpr int kNumBlocks = 40;
constexpr int kMaxRunning = 12;

struct SimRequest {
    Tokens tokens;  // prompt, then decoded tokens
    int num_computed = 0;
};

// Everything a failed allocate_slots() must leave unchanged.
struct Snapshot {
    std::vector<BlockId> free_queue;
    std::vector<int> ref_counts;
    int num_cached_blocks;
    int64_t num_allocated_blocks;
    std::vector<BlockId> table;
    bool has_request;
    bool operator==(const Snapshot&) const = default;
};

class KvSimulation {
public:
    KvSimulation(uint32_t seed, bool enable_prefix_caching)
        : rng_(seed),
          manager_(KvCacheConfig{.block_size = kBlockSize, .num_blocks = kNumBlocks,
                                 .enable_prefix_caching = enable_prefix_caching}),
          contents_(kNumBlocks, Tokens(kBlockSize, -1)) {
        for (int prefix_idx = 0; prefix_idx < 3; ++prefix_idx) shared_prefixes_.push_back(random_tokens(4, 24));
    }

    void step() {
        int choice = uniform(0, 9);
        if (requests_.empty() || (choice < 3 && static_cast<int>(requests_.size()) < kMaxRunning)) {
            add();
        } else if (choice < 8) {
            extend(random_request());
        } else {
            free(random_request());
        }
        Status status = manager_.verify();
        ASSERT_TRUE(status.is_ok()) << status.message();
    }

    void free_all() {
        while (!requests_.empty()) free(requests_.begin()->first);
    }

    const KvManager& manager() const { return manager_; }
    int64_t num_failed_allocations() const { return num_failed_allocations_; }

private:
    int uniform(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }
    Tokens random_tokens(int min_len, int max_len) {
        Tokens tokens(uniform(min_len, max_len));
        for (TokenId& token : tokens) token = uniform(0, 5);  // a tiny vocabulary makes identical blocks common
        return tokens;
    }
    RequestId random_request() {
        auto it = requests_.begin();
        std::advance(it, uniform(0, static_cast<int>(requests_.size()) - 1));
        return it->first;
    }

    Snapshot snapshot(RequestId request_id) const {
        Snapshot snap{manager_.pool().free_queue(), {}, manager_.pool().num_cached_blocks(),
                      manager_.pool().stats().num_allocated_blocks, {}, manager_.has_request(request_id)};
        for (BlockId block_id = 0; block_id < kNumBlocks; ++block_id) {
            snap.ref_counts.push_back(manager_.pool().ref_count(block_id));
        }
        std::span<const BlockId> table = manager_.block_ids(request_id);
        snap.table.assign(table.begin(), table.end());
        return snap;
    }

    // Tries to schedule `num_new_tokens`; on success records what the step writes into the blocks.
    bool schedule(RequestId request_id, SimRequest& request, int num_new_tokens, const ComputedBlocks& hit) {
        Snapshot before = snapshot(request_id);
        auto new_blocks = manager_.allocate_slots(request_id, request.tokens, request.num_computed, num_new_tokens, hit);
        if (!new_blocks) {
            ++num_failed_allocations_;
            EXPECT_EQ(snapshot(request_id), before) << "a failed allocation changed the pool";
            return false;
        }
        std::span<const BlockId> table = manager_.block_ids(request_id);
        int begin = request.num_computed + hit.num_tokens;
        for (int pos = begin; pos < begin + num_new_tokens; ++pos) {
            BlockId block_id = table[pos / kBlockSize];
            EXPECT_EQ(manager_.pool().ref_count(block_id), 1) << "writing into shared block " << block_id;
            contents_[block_id][pos % kBlockSize] = request.tokens[pos];
        }
        request.num_computed = begin + num_new_tokens;
        manager_.cache_computed_blocks(request_id, request.tokens, request.num_computed);  // the step ran
        return true;
    }

    void add() {
        RequestId request_id = next_request_id_++;
        SimRequest request;
        request.tokens = shared_prefixes_[uniform(0, 2)];
        request.tokens.resize(uniform(0, static_cast<int>(request.tokens.size())));
        Tokens tail = random_tokens(1, 20);
        request.tokens.insert(request.tokens.end(), tail.begin(), tail.end());

        ComputedBlocks hit = manager_.get_computed_blocks(request.tokens);
        ASSERT_LT(hit.num_tokens, static_cast<int>(request.tokens.size()));
        for (size_t block_idx = 0; block_idx < hit.block_ids.size(); ++block_idx) {
            auto first = request.tokens.begin() + block_idx * kBlockSize;
            ASSERT_EQ(contents_[hit.block_ids[block_idx]], Tokens(first, first + kBlockSize))
                << "prefix hit on block " << hit.block_ids[block_idx] << " holding other tokens";
        }
        int num_remaining = static_cast<int>(request.tokens.size()) - hit.num_tokens;
        if (schedule(request_id, request, std::min(num_remaining, uniform(1, 12)), hit)) {
            requests_.emplace(request_id, std::move(request));
        }
    }

    void extend(RequestId request_id) {
        SimRequest& request = requests_.at(request_id);
        int num_remaining = static_cast<int>(request.tokens.size()) - request.num_computed;
        if (num_remaining == 0) {  // decode: the token sampled last step is computed now
            request.tokens.push_back(uniform(0, 5));
            num_remaining = 1;
        }
        // Out of blocks: preempt the request (recompute later), as a scheduler would.
        if (!schedule(request_id, request, std::min(num_remaining, uniform(1, 12)), {})) free(request_id);
    }

    void free(RequestId request_id) {
        manager_.free(request_id);
        requests_.erase(request_id);
    }

    std::mt19937 rng_;
    KvManager manager_;
    std::vector<Tokens> contents_;  // what each block's slots hold, as the model would have written it
    std::vector<Tokens> shared_prefixes_;
    std::map<RequestId, SimRequest> requests_;
    RequestId next_request_id_ = 0;
    int64_t num_failed_allocations_ = 0;
};

void run_simulation(uint32_t seed, bool enable_prefix_caching) {
    KvSimulation simulation(seed, enable_prefix_caching);
    for (int step_idx = 0; step_idx < 3000; ++step_idx) {
        ASSERT_NO_FATAL_FAILURE(simulation.step()) << "seed " << seed << ", step " << step_idx;
    }
    simulation.free_all();
    const KvManager& manager = simulation.manager();
    EXPECT_EQ(manager.num_requests(), 0);
    EXPECT_EQ(manager.num_free_blocks(), kNumBlocks - 1) << "leaked blocks";
    EXPECT_DOUBLE_EQ(manager.usage(), 0.0);
    Status status = manager.verify();
    EXPECT_TRUE(status.is_ok()) << status.message();
    // The run must have exercised the interesting paths, or it proves little.
    EXPECT_GT(simulation.num_failed_allocations(), 0);
    if (enable_prefix_caching) {
        EXPECT_GT(manager.prefix_cache_stats().num_hit_tokens, 0);
        EXPECT_GT(manager.pool().stats().num_evicted_blocks, 0);
    }
}

TEST(KvRandomTest, WithPrefixCaching) {
    for (uint32_t seed : {1u, 2u, 3u}) run_simulation(seed, true);
}

TEST(KvRandomTest, WithoutPrefixCaching) {
    run_simulation(4, false);
}

}  // namespace
}  // namespace tern::kv
