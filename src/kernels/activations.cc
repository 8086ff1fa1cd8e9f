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

namespace {

// A per-thread array derived from one input, computed once per Activations::generation: the row ranges a thread
// takes of the same matmul (and the other matmuls of that input) reuse it. Each caller's `fill` lambda is its own
// type, so each caller has its own thread-local array.
template <typename T, typename Fill>
const std::vector<T>& derived_per_thread(const Activations& activations, int64_t count, Fill fill) {
    thread_local std::vector<T> values;
    thread_local uint64_t generation = 0;
    if (generation == activations.generation) return values;
    generation = activations.generation;
    if (static_cast<int64_t>(values.size()) < count) values.resize(static_cast<size_t>(count));
    fill(values.data());
    return values;
}

}  // namespace

const std::vector<int32_t>& q6_k_sub_block_biases(const Activations& activations) {
    const int64_t count = activations.num_tokens * (activations.length / 16);
    return derived_per_thread<int32_t>(activations, count, [&](int32_t* bias) {
        for (int64_t run = 0; run < count; ++run) {
            int32_t sum = 0;
            for (int idx = 0; idx < 16; ++idx) sum += activations.q8[static_cast<size_t>(16 * run + idx)];
            bias[run] = -32 * sum;
        }
    });
}

const std::vector<int32_t>& k_quant_block_sum_pairs(const Activations& activations) {
    // Spans are whole, so a token's spans and blocks follow one another.
    TERN_CHECK(activations.length % kActivationScaleSpan == 0)
        << "K-quant rows are whole 256-value super-blocks, got a length of " << activations.length;
    const int64_t num_spans = activations.num_tokens * activations.num_scale_spans();
    return derived_per_thread<int32_t>(activations, 4 * num_spans, [&](int32_t* pairs) {
        for (int64_t span = 0; span < num_spans; ++span) {
            const int32_t* sums = activations.block_sum.data() + span * kBlocksPerScaleSpan;
            for (int word = 0; word < 4; ++word) {
                const int low = (word / 2) * 4 + word % 2;  // blocks 0, 1, 4, 5 with 2, 3, 6, 7 above them
                const uint32_t packed = (static_cast<uint32_t>(sums[low]) & 0xFFFFu) |
                                        (static_cast<uint32_t>(sums[low + 2]) << 16);
                pairs[4 * span + word] = static_cast<int32_t>(packed);
            }
        }
    });
}

const std::vector<int8_t>& interleaved_q8(const Activations& activations) {
    const int64_t num_tokens = activations.num_tokens, num_chunks = activations.length / 4;
    return derived_per_thread<int8_t>(activations, num_tokens * activations.length, [&](int8_t* interleaved) {
        for (int64_t token = 0; token < num_tokens; ++token) {
            const int8_t* row = activations.q8.data() + token * activations.length;
            for (int64_t chunk = 0; chunk < num_chunks; ++chunk) {
                std::memcpy(interleaved + (chunk * num_tokens + token) * 4, row + chunk * 4, 4);
            }
        }
    });
}

void prepare_activations(const KernelTable& table, const float* x, int64_t num_tokens, int64_t length, int64_t stride,
                         bool quantize, Activations* out) {
    reserve_activations(x, num_tokens, length, stride, quantize, out);
    quantize_activation_rows(table, 0, num_tokens, out);
}

}  // namespace tern::kernels
