#include "kernels/activations.h"

#include "base/check.h"
#include "kernels/kernels.h"

namespace tern::kernels {

void prepare_activations(const KernelTable& table, const float* x, int64_t num_tokens, int64_t length, int64_t stride, bool quantize,
                         Activations* out) {
    out->f32 = x;
    out->f32_stride = stride;
    out->num_tokens = num_tokens;
    out->length = length;
    out->has_q8 = quantize;
    if (!quantize) return;
    TERN_CHECK(length % kActivationBlock == 0) << "8-bit activations need a multiple of 32 values, got " << length;
    const size_t num_values = static_cast<size_t>(num_tokens * length);
    const size_t num_blocks = num_values / kActivationBlock;
    if (out->q8.size() < num_values) out->q8.resize(num_values);
    if (out->scale.size() < num_blocks) out->scale.resize(num_blocks);
    if (out->sum.size() < num_blocks) out->sum.resize(num_blocks);
    const QuantizeActivationsFn quantize_row = table.quantize_activations;
    for (int64_t token_idx = 0; token_idx < num_tokens; ++token_idx) {
        const int64_t block_offset = token_idx * out->num_blocks();
        quantize_row(x + token_idx * stride, length, out->q8.data() + token_idx * length,
                     out->scale.data() + block_offset, out->sum.data() + block_offset);
    }
}

}  // namespace tern::kernels
