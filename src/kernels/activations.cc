#include "kernels/activations.h"

#include <atomic>
#include <cstring>

#include "base/check.h"
#include "kernels/kernels.h"

namespace tern::kernels {

void reserve_activations(const float* x, int64_t num_tokens, int64_t length, int64_t stride, bool quantize,
                         Activations* out) {
    out->f32 = x;
    out->f32_stride = stride;
    out->num_tokens = num_tokens;
    out->length = length;
    out->has_q8 = quantize;
    static std::atomic<uint64_t> last_generation{0};
    out->generation = last_generation.fetch_add(1, std::memory_order_relaxed) + 1;
    if (!quantize) return;
    TERN_CHECK(length % kActivationBlock == 0) << "8-bit activations need a multiple of 32 values, got " << length;
    const size_t num_values = static_cast<size_t>(num_tokens * length);
    const size_t num_blocks = num_values / kActivationBlock;
    if (out->q8.size() < num_values) out->q8.resize(num_values);
    if (out->scale.size() < num_blocks) out->scale.resize(num_blocks);
    if (out->sum.size() < num_blocks) out->sum.resize(num_blocks);
    if (out->block_sum.size() < num_blocks) out->block_sum.resize(num_blocks);
}

void quantize_activation_rows(const KernelTable& table, int64_t token_begin, int64_t token_end, Activations* out) {
    if (!out->has_q8) return;
    for (int64_t token_idx = token_begin; token_idx < token_end; ++token_idx) {
        const int64_t block_offset = token_idx * out->num_blocks();
        table.quantize_activations(out->f32 + token_idx * out->f32_stride, out->length,
                                   out->q8.data() + token_idx * out->length, out->scale.data() + block_offset,
                                   out->sum.data() + block_offset, out->block_sum.data() + block_offset);
    }
}

const std::vector<int32_t>& q6_k_sub_block_biases(const Activations& activations) {
    thread_local std::vector<int32_t> bias;
    thread_local uint64_t bias_generation = 0;
    if (bias_generation == activations.generation) return bias;  // another range of the same input
    bias_generation = activations.generation;
    const int64_t count = activations.num_tokens * (activations.length / 16);
    if (static_cast<int64_t>(bias.size()) < count) bias.resize(static_cast<size_t>(count));
    for (int64_t run = 0; run < count; ++run) {
        int32_t sum = 0;
        for (int idx = 0; idx < 16; ++idx) sum += activations.q8[static_cast<size_t>(16 * run + idx)];
        bias[static_cast<size_t>(run)] = -32 * sum;
    }
    return bias;
}

const std::vector<int32_t>& k_quant_block_sum_pairs(const Activations& activations) {
    thread_local std::vector<int32_t> pairs;
    thread_local uint64_t pairs_generation = 0;
    if (pairs_generation == activations.generation) return pairs;
    pairs_generation = activations.generation;
    // Spans are whole, so a token's spans and blocks follow one another.
    TERN_CHECK(activations.length % kActivationScaleSpan == 0)
        << "K-quant rows are whole 256-value super-blocks, got a length of " << activations.length;
    const int64_t num_spans = activations.num_tokens * activations.num_scale_spans();
    if (static_cast<int64_t>(pairs.size()) < 4 * num_spans) pairs.resize(static_cast<size_t>(4 * num_spans));
    for (int64_t span = 0; span < num_spans; ++span) {
        const int32_t* sums = activations.block_sum.data() + span * kBlocksPerScaleSpan;
        for (int word = 0; word < 4; ++word) {
            const int low = (word / 2) * 4 + word % 2;  // blocks 0, 1, 4, 5 with 2, 3, 6, 7 above them
            const uint32_t packed = (static_cast<uint32_t>(sums[low]) & 0xFFFFu) |
                                    (static_cast<uint32_t>(sums[low + 2]) << 16);
            pairs[static_cast<size_t>(4 * span + word)] = static_cast<int32_t>(packed);
        }
    }
    return pairs;
}

const std::vector<int8_t>& interleaved_q8(const Activations& activations) {
    thread_local std::vector<int8_t> interleaved;
    thread_local uint64_t interleaved_generation = 0;
    if (interleaved_generation == activations.generation) return interleaved;
    interleaved_generation = activations.generation;
    const int64_t num_tokens = activations.num_tokens, num_chunks = activations.length / 4;
    if (static_cast<int64_t>(interleaved.size()) < num_tokens * activations.length) {
        interleaved.resize(static_cast<size_t>(num_tokens * activations.length));
    }
    for (int64_t token = 0; token < num_tokens; ++token) {
        const int8_t* row = activations.q8.data() + token * activations.length;
        for (int64_t chunk = 0; chunk < num_chunks; ++chunk) {
            std::memcpy(interleaved.data() + (chunk * num_tokens + token) * 4, row + chunk * 4, 4);
        }
    }
    return interleaved;
}

void prepare_activations(const KernelTable& table, const float* x, int64_t num_tokens, int64_t length, int64_t stride,
                         bool quantize, Activations* out) {
    reserve_activations(x, num_tokens, length, stride, quantize, out);
    quantize_activation_rows(table, 0, num_tokens, out);
}

}  // namespace tern::kernels
