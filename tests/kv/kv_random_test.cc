// Randomized add / extend / free sequences against KvManager. Every step checks the pool's invariants, that a
// failed allocation left no trace, and, through a model of what each block holds, that a prefix hit returns
// blocks holding exactly the hit tokens, that no shared block is ever written and that every position a step's
// queries read (all earlier ones, or a sliding group's window) is held and holds its token. With KV groups, sliding
// groups also hold no more blocks than their window and one step need. Ends with no leaked block.
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
    std::vector<std::vector<BlockId>> tables;
    bool has_request;
    bool operator==(const Snapshot&) const = default;
};

class KvSimulation {
public:
    KvSimulation(uint32_t seed, bool enable_prefix_caching, std::vector<int> group_windows, int num_blocks)
        : rng_(seed),
          manager_(KvCacheConfig{.block_size = kBlockSize, .num_blocks = num_blocks,
                                 .enable_prefix_caching = enable_prefix_caching, .group_windows = group_windows}),
          contents_(num_blocks, Tokens(kBlockSize, -1)) {
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
    int64_t num_checked_steps() const { return num_checked_steps_; }
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
        for (BlockId block_id = 0; block_id < manager_.pool().num_blocks(); ++block_id) {
            snap.ref_counts.push_back(manager_.pool().ref_count(block_id));
        }
        for (int group = 0; group < manager_.num_groups(); ++group) {
            std::span<const BlockId> table = manager_.block_ids(request_id, group);
            snap.tables.emplace_back(table.begin(), table.end());
        }
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
        int begin = request.num_computed + hit.num_tokens;
        for (int group = 0; group < manager_.num_groups(); ++group) {
            std::span<const BlockId> table = manager_.block_ids(request_id, group);
            for (int pos = begin; pos < begin + num_new_tokens; ++pos) {
                BlockId block_id = table[pos / kBlockSize];
                EXPECT_NE(block_id, kNullBlockId) << "no block for position " << pos << " in group " << group;
                EXPECT_EQ(manager_.pool().ref_count(block_id), 1) << "writing into shared block " << block_id;
                contents_[block_id][pos % kBlockSize] = request.tokens[pos];
            }
            check_reads(request, table, group, begin, begin + num_new_tokens);
        }
        request.num_computed = begin + num_new_tokens;
        manager_.cache_computed_blocks(request_id, request.tokens, request.num_computed);  // the step ran
        return true;
    }

    // What the queries at positions [begin, end) read in `group` is held and holds the request's tokens; a sliding
    // group holds nothing before the first query's window.
    void check_reads(const SimRequest& request, std::span<const BlockId> table, int group, int begin, int end) {
        const int window = manager_.group_window(group);
        const int first_read = window == 0 ? 0 : std::max(0, begin - window + 1);
        for (int pos = first_read; pos < end; ++pos) {
            BlockId block_id = table[pos / kBlockSize];
            ASSERT_NE(block_id, kNullBlockId) << "position " << pos << " is read but its block was released";
            ASSERT_EQ(contents_[block_id][pos % kBlockSize], request.tokens[pos]) << "group " << group << ", " << pos;
        }
        for (int block_idx = 0; window > 0 && (block_idx + 1) * kBlockSize <= first_read; ++block_idx) {
            ASSERT_EQ(table[block_idx], kNullBlockId) << "block " << block_idx << " outside the window is still held";
        }
        ++num_checked_steps_;
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
        for (const std::vector<BlockId>& table : hit.tables) {
            for (size_t block_idx = 0; block_idx < table.size(); ++block_idx) {
                if (table[block_idx] == kNullBlockId) continue;  // before a sliding group's window
                auto first = request.tokens.begin() + block_idx * kBlockSize;
                ASSERT_EQ(contents_[table[block_idx]], Tokens(first, first + kBlockSize))
                    << "prefix hit on block " << table[block_idx] << " holding other tokens";
            }
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
    int64_t num_checked_steps_ = 0;
};

void run_simulation(uint32_t seed, bool enable_prefix_caching, std::vector<int> group_windows = {0},
                    int num_blocks = kNumBlocks) {
    KvSimulation simulation(seed, enable_prefix_caching, group_windows, num_blocks);
    for (int step_idx = 0; step_idx < 3000; ++step_idx) {
        ASSERT_NO_FATAL_FAILURE(simulation.step()) << "seed " << seed << ", step " << step_idx;
    }
    simulation.free_all();
    const KvManager& manager = simulation.manager();
    EXPECT_EQ(manager.num_requests(), 0);
    EXPECT_EQ(manager.num_free_blocks(), num_blocks - 1) << "leaked blocks";
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

// Gemma-like groups: one full-attention group and two sliding ones (windows shorter and longer than a step), with
// and without prefix caching; and a model whose only group slides (Mistral).
TEST(KvRandomTest, SlidingWindowGroups) {
    for (uint32_t seed : {5u, 6u, 7u}) {
        SCOPED_TRACE(seed);
        run_simulation(seed, true, {0, 5, 9});
    }
    run_simulation(8, false, {0, 5, 9});
    run_simulation(9, true, {6}, 16);  // a sliding group alone holds little: a smaller pool to run short
}

}  // namespace
}  // namespace tern::kv
