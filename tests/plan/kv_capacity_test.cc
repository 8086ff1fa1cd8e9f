// The memory formulas, with the exact numbers of issue 7.
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/gguf.h"
#include "model/hparams.h"
#include "model/kv_groups.h"
#include "plan/kv_capacity.h"
#include "plan/planner.h"
#include "synth/presets.h"
#include "synth/synth.h"

namespace tern::plan {
namespace {

ModelShape preset(const char* name) { return model_shape_from_preset(name).value(); }

TEST(KvCapacity, SevenBillionMhaModelNeedsHalfAGigabyteAt1000Tokens) {
    const ModelShape llama2 = preset("llama2-7b");  // 32 layers, 32 KV heads, head dim 128
    ASSERT_EQ(llama2.num_layers, 32);
    ASSERT_EQ(llama2.num_kv_heads, 32);
    ASSERT_EQ(llama2.head_dim, 128);
    const int64_t per_token = kv_bytes_per_token(llama2, DType::kF16);
    EXPECT_EQ(per_token, 2 * 32 * 32 * 128 * 2);  // K and V x layers x KV heads x head dim x 2 bytes
    const double per_request = static_cast<double>(per_token) * 1000;
    EXPECT_NEAR(per_request, 0.5e9, 0.05e9);
}

TEST(KvCapacity, GroupedQueryAttentionNeedsFourTimesLessKvPerToken) {
    const ModelShape llama3 = preset("llama3-8b");  // 32 query heads share 8 KV heads
    ModelShape all_heads = llama3;
    all_heads.num_kv_heads = all_heads.num_heads;
    EXPECT_EQ(kv_bytes_per_token(llama3, DType::kF16), 131072);
    EXPECT_EQ(kv_bytes_per_token(all_heads, DType::kF16), 4 * kv_bytes_per_token(llama3, DType::kF16));
}

TEST(KvCapacity, Q8_0KvHolds34BytesPer32Values) {
    const ModelShape llama2 = preset("llama2-7b");
    EXPECT_EQ(kv_bytes_per_token(llama2, DType::kQ8_0), 2 * 32 * (4096 / 32 * 34));
    EXPECT_EQ(kv_bytes_per_token(llama2, DType::kF32), 2 * kv_bytes_per_token(llama2, DType::kF16));
    ModelShape odd = llama2;
    odd.head_dim = 100;
    odd.num_kv_heads = 1;
    const Status status = check_kv_type(odd, DType::kQ8_0);
    EXPECT_FALSE(status.is_ok());
    EXPECT_NE(status.message().find("do not fit q8_0 blocks of 32"), std::string::npos) << status.message();
    EXPECT_FALSE(check_kv_type(llama2, DType::kQ6_K).is_ok());
}

TEST(KvCapacity, BlocksRoundRequestsUpToWholeBlocks) {
    EXPECT_EQ(blocks_for_tokens(1000, 16), 63);
    EXPECT_EQ(blocks_for_tokens(1008, 16), 63);
    EXPECT_EQ(blocks_for_tokens(1009, 16), 64);
    EXPECT_EQ(blocks_for_tokens(1, 16), 1);
}

TEST(KvCapacity, BudgetBlocksAndCapacityFollowTheFormula) {
    const ModelShape llama2 = preset("llama2-7b");
    MemoryInputs inputs;
    inputs.device_memory_bytes = 24'000'000'000;
    inputs.weight_bytes = 14'000'000'000;
    inputs.kv_bytes_per_token = kv_bytes_per_token(llama2, DType::kF16);
    inputs.workspace_bytes = 1'000'000'000;
    inputs.headroom = 0.25;
    const ReplicaMemory memory = replica_memory(llama2, inputs, 1, 1, 1000);
    EXPECT_EQ(memory.free_bytes, 10'000'000'000);
    EXPECT_EQ(memory.kv_budget_bytes, 6'750'000'000);  // (24 - 14 - 1) GB x 0.75
    EXPECT_EQ(memory.block_bytes, 16 * 524288);
    EXPECT_EQ(memory.kv_blocks, 6'750'000'000 / (16 * 524288));
    EXPECT_EQ(memory.kv_capacity_tokens, memory.kv_blocks * 16);
    EXPECT_EQ(memory.blocks_per_request, 63);
    EXPECT_EQ(memory.recommended_concurrent, memory.kv_blocks / 63);
    EXPECT_EQ(memory.max_concurrent, 10'000'000'000 / 524'288'000);
}

// A sliding-window model's KV groups are laid out as the engine lays them (model/kv_groups.h), and a request holds
// its full groups' blocks for every position but its sliding groups' for a window and a step.
TEST(KvCapacity, SlidingWindowModelsHoldTheirWindowOnly) {
    ThreadPool pool(1);
    for (const char* name : {"tiny-gemma2", "tiny-gemma3", "tiny-mistral", "tiny", "gemma3-1b", "gemma2-2b"}) {
        SCOPED_TRACE(name);
        std::optional<ModelPreset> synth = find_preset(name);
        // Every layer kept, at a small vocabulary and width: the layers and their windows are what count (at the
        // real widths, writing gemma2-2b alone took a minute).
        ASSERT_TRUE(shrink_preset(&*synth, 0, 512, 0).is_ok());
        synth->embedding_dim = 64;
        synth->ffn_dim = 64;
        const std::string path = ::testing::TempDir() + "/kv-layout-" + name + ".gguf";
        ASSERT_TRUE(write_synth_model(*synth, SynthOptions{DType::kQ8_0, 1}, path, &pool).is_ok());
        auto file = GgufFile::open(path);
        ASSERT_TRUE(file.is_ok());
        const KvGroups engine = kv_groups_for(hparams_from_gguf(*file.value()).value());
        const KvLayout plan = kv_layout(model_shape_from_gguf(path).value());
        EXPECT_EQ(plan.layers_per_block, engine.layers_per_block);
        EXPECT_EQ(plan.group_windows, engine.windows);
        EXPECT_EQ(plan.group_windows, kv_layout(preset(name)).group_windows) << "preset and file agree";
        std::filesystem::remove(path);
    }
    // Gemma 3 1B: 4 global layers, 22 sliding ones in 6 groups of 4; at 8,192 tokens and 512-token steps a request
    // holds 512 blocks of the global group and 65 of each sliding group (511 + 512 positions, and one more block).
    MemoryInputs inputs;
    inputs.device_memory_bytes = 24'000'000'000;
    inputs.weight_bytes = 1'000'000'000;
    const ModelShape gemma = preset("gemma3-1b");
    inputs.kv_bytes_per_token = kv_bytes_per_token(gemma, DType::kF16);
    inputs.max_step_tokens = 512;
    const ReplicaMemory memory = replica_memory(gemma, inputs, 1, 1, 8192);
    EXPECT_EQ(kv_layout(gemma).layers_per_block, 4);
    EXPECT_EQ(memory.block_bytes, 16 * inputs.kv_bytes_per_token * 4 / 26);
    EXPECT_EQ(memory.blocks_per_request, 512 + 6 * 65);
}

TEST(KvCapacity, AGivenBudgetIsCutIntoWholeBlocks) {
    PlanOptions options;
    options.model = preset("tinyllama-1.1b");  // 22 layers x 4 KV heads x 64: 22528 B per token at f16
    options.device = find_device("cpu").value();
    options.kv_budget_bytes = 1'000'000'000;
    const Plan plan = make_plan(options).value();
    EXPECT_EQ(plan.memory.kv_budget_bytes, 1'000'000'000);
    EXPECT_EQ(plan.memory.block_bytes, 16 * 22528);
    EXPECT_EQ(plan.memory.kv_blocks, 1'000'000'000 / (16 * 22528));  // 2774 blocks
    EXPECT_EQ(plan.memory.kv_capacity_tokens, 2774 * 16);
}

TEST(KvCapacity, WorkspaceCountsTernsForwardScratch) {
    const ModelShape llama2 = preset("llama2-7b");
    // 512 tokens x 4 bytes x (2x4096 hidden/normed + 2x4096 q/out + 2x4096 k/v + 2x11008 gate/up + 128 rope + 32000
    // logits)
    EXPECT_EQ(workspace_bytes(llama2, 512), 512 * 4 * (8192 + 8192 + 8192 + 22016 + 128 + 32000));
}

TEST(KvCapacity, TwentyFourGigabyteDeviceWithFourteenGigabytesOfWeights) {
    PlanOptions options;
    options.model = preset("llama2-7b");
    options.weight_bytes = 14'000'000'000;
    options.device.name = "24gb";
    options.device.memory_bytes = 24'000'000'000;
    options.workload.input.mean = 800;
    options.workload.output.mean = 200;  // 1000 tokens per request
    const Plan plan = make_plan(options).value();
    EXPECT_EQ(plan.planning_tokens, 1000);
    EXPECT_EQ(plan.kv_bytes_per_request, 524'288'000);
    // In theory all 10 GB left after the weights hold KV: 10e9 / 0.524e9 = 19.07.
    EXPECT_EQ(plan.memory.max_concurrent, 19);
    // Recommended: (10 GB - 0.16 GB workspace) x 0.8 = 7.87 GB = 938 blocks of 16 tokens; 63 blocks per request.
    EXPECT_EQ(plan.memory.kv_blocks, 938);
    EXPECT_EQ(plan.memory.recommended_concurrent, 14);
    EXPECT_GE(plan.memory.recommended_concurrent, 12);
    EXPECT_LE(plan.memory.recommended_concurrent, 15);
    EXPECT_TRUE(plan.fits);
    EXPECT_EQ(plan.devices.devices_needed, 1);
    EXPECT_FALSE(plan.throughput.has_value()) << "no bandwidth given, so no throughput estimate";
}

TEST(KvCapacity, LessHeadroomAndQ8KvHoldMoreRequests) {
    PlanOptions options;
    options.model = preset("llama2-7b");
    options.device = find_device("rtx4090").value();
    options.workload.input.mean = 1000;
    options.workload.output.mean = 1;
    const Plan base = make_plan(options).value();
    options.headroom = 0.1;
    const Plan less_headroom = make_plan(options).value();
    options.kv_type = DType::kQ8_0;
    const Plan q8_kv = make_plan(options).value();
    EXPECT_GT(less_headroom.memory.recommended_concurrent, base.memory.recommended_concurrent);
    EXPECT_GT(q8_kv.memory.recommended_concurrent, less_headroom.memory.recommended_concurrent);
    EXPECT_EQ(q8_kv.kv_bytes_per_token * 64, base.kv_bytes_per_token * 34);
}

}  // namespace
}  // namespace tern::plan
