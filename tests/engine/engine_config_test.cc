// Capacity planning: blocks from a byte budget, sequences that fit, and the errors that name the flag to change.
#include <gtest/gtest.h>

#include "engine/engine_config.h"

namespace tern::engine {
namespace {

HParams tinyllama_like() {
    HParams hparams;
    hparams.num_layers = 22;
    hparams.num_heads = 32;
    hparams.num_kv_heads = 4;
    hparams.head_dim = 64;
    hparams.embedding_dim = 2048;
    hparams.context_length = 2048;
    return hparams;
}

TEST(EngineCapacity, BlocksFromBudget) {
    EngineConfig config;
    config.kv_cache_bytes = 1ull << 30;
    auto capacity = plan_capacity(tinyllama_like(), config);
    ASSERT_TRUE(capacity.is_ok()) << capacity.status().message();
    // f16: 22 layers * 2 (K, V) * 16 tokens * 256 * 2 bytes = 360,448 bytes per block.
    EXPECT_EQ(capacity.value().bytes_per_block, 360448);
    EXPECT_EQ(capacity.value().num_blocks, (1ll << 30) / 360448 - 1);
    EXPECT_EQ(capacity.value().kv_tokens, capacity.value().num_blocks * 16);
    EXPECT_EQ(capacity.value().max_sequences_at_context, capacity.value().num_blocks / 128);
    EXPECT_EQ(capacity.value().max_sequences_at(100), capacity.value().num_blocks / 7);
    config.kv_type = KvType::kQ8_0;
    EXPECT_EQ(plan_capacity(tinyllama_like(), config).value().bytes_per_block, 22 * 2 * 16 * 272);
}

TEST(EngineCapacity, ErrorsNameTheFlag) {
    EngineConfig config;
    config.kv_cache_bytes = 1000;
    EXPECT_NE(plan_capacity(tinyllama_like(), config).status().message().find("--kv-cache-mem"), std::string::npos);
    config.kv_cache_bytes = 1 << 30;
    config.max_batched_tokens = 0;
    EXPECT_NE(plan_capacity(tinyllama_like(), config).status().message().find("--max-batched-tokens"),
              std::string::npos);
    HParams small_heads = tinyllama_like();
    small_heads.head_dim = 8;
    config.max_batched_tokens = 16;
    config.kv_type = KvType::kQ8_0;
    EXPECT_NE(plan_capacity(small_heads, config).status().message().find("multiple of 32"), std::string::npos);
}

TEST(EngineConfig, SchedulingPolicyIsFcfsByDefaultAndNamesTheFlag) {
    EXPECT_EQ(EngineConfig{}.scheduling_policy, SchedulingPolicy::kFcfs) << "vLLM's default";
    EXPECT_EQ(parse_scheduling_policy("fcfs").value(), SchedulingPolicy::kFcfs);
    EXPECT_EQ(parse_scheduling_policy("priority").value(), SchedulingPolicy::kPriority);
    const Status unknown = parse_scheduling_policy("lifo").status();
    EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(unknown.message().find("--scheduling-policy"), std::string::npos) << unknown.message();
}

TEST(EngineCapacity, DefaultBudgetIsCappedByMaxRunning) {
    EngineConfig config;
    config.max_running = 2;
    auto capacity = plan_capacity(tinyllama_like(), config);
    ASSERT_TRUE(capacity.is_ok());
    EXPECT_LE(capacity.value().max_sequences_at_context, 2);
    EXPECT_GE(capacity.value().max_sequences_at_context, 1);
}

}  // namespace
}  // namespace tern::engine
