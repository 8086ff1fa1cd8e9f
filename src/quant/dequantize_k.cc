// Dequantization of the K types (super-blocks of 256). The float expressions keep ggml's shape, e.g. (d * sc) * q
// and not d * (sc * q), because bit-exact agreement depends on the order of the roundings.
#include "base/fp16.h"
#include "quant/dequantize.h"
#include "quant/internal.h"

namespace tern {
namespace {

struct ScaleMin {
    float scale;  // d * sc
    float min;    // dmin * m
};

// Sub-block `sub_block` of a Q4_K / Q5_K super-block: value = scale * q - min.
ScaleMin sub_block_scale_min(float d, float dmin, const uint8_t* packed_scales, int sub_block) {
    uint8_t sc = 0;
    uint8_t m = 0;
    unpack_scale_min_k4(sub_block, packed_scales, &sc, &m);
    return {d * static_cast<float>(sc), dmin * static_cast<float>(m)};
}

}  // namespace

void dequantize_row_q4_k(const BlockQ4_K* src, float* dst, int64_t num_elements) {
    const int64_t count = quant_internal::num_blocks(num_elements, kQK_K);
    for (int64_t b = 0; b < count; ++b) {
        const BlockQ4_K& block = src[b];
        const float d = fp16_to_fp32(block.d);
        const float dmin = fp16_to_fp32(block.dmin);
        const uint8_t* q = block.qs;
        for (int chunk = 0; chunk < kQK_K / 64; ++chunk, q += 32, dst += 64) {
            const auto [d_low, m_low] = sub_block_scale_min(d, dmin, block.scales, 2 * chunk);
            const auto [d_high, m_high] = sub_block_scale_min(d, dmin, block.scales, 2 * chunk + 1);
            for (int l = 0; l < 32; ++l) dst[l] = d_low * static_cast<float>(q[l] & 0x0f) - m_low;
            for (int l = 0; l < 32; ++l) dst[l + 32] = d_high * static_cast<float>(q[l] >> 4) - m_high;
        }
    }
}

void dequantize_row_q5_k(const BlockQ5_K* src, float* dst, int64_t num_elements) {
    const int64_t count = quant_internal::num_blocks(num_elements, kQK_K);
    for (int64_t b = 0; b < count; ++b) {
        const BlockQ5_K& block = src[b];
        const float d = fp16_to_fp32(block.d);
        const float dmin = fp16_to_fp32(block.dmin);
        const uint8_t* ql = block.qs;
        for (int chunk = 0; chunk < kQK_K / 64; ++chunk, ql += 32, dst += 64) {
            const auto [d_low, m_low] = sub_block_scale_min(d, dmin, block.scales, 2 * chunk);
            const auto [d_high, m_high] = sub_block_scale_min(d, dmin, block.scales, 2 * chunk + 1);
            const uint8_t low_mask = static_cast<uint8_t>(1u << (2 * chunk));
            const uint8_t high_mask = static_cast<uint8_t>(2u << (2 * chunk));
            for (int l = 0; l < 32; ++l) {
                const int value = (ql[l] & 0x0f) + ((block.qh[l] & low_mask) ? 16 : 0);
                dst[l] = d_low * static_cast<float>(value) - m_low;
            }
            for (int l = 0; l < 32; ++l) {
                const int value = (ql[l] >> 4) + ((block.qh[l] & high_mask) ? 16 : 0);
                dst[l + 32] = d_high * static_cast<float>(value) - m_high;
            }
        }
    }
}

void dequantize_row_q6_k(const BlockQ6_K* src, float* dst, int64_t num_elements) {
    const int64_t count = quant_internal::num_blocks(num_elements, kQK_K);
    for (int64_t b = 0; b < count; ++b) {
        const BlockQ6_K& block = src[b];
        const float d = fp16_to_fp32(block.d);
        for (int half = 0; half < 2; ++half, dst += 128) {
            const uint8_t* ql = block.ql + 64 * half;
            const uint8_t* qh = block.qh + 32 * half;
            const int8_t* sc = block.scales + 8 * half;
            for (int l = 0; l < 32; ++l) {
                const int s = l / 16;
                const int q0 = ((ql[l] & 0x0f) | ((qh[l] >> 0) & 3) << 4) - 32;
                const int q1 = ((ql[l + 32] & 0x0f) | ((qh[l] >> 2) & 3) << 4) - 32;
                const int q2 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                const int q3 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                dst[l] = d * static_cast<float>(sc[s]) * static_cast<float>(q0);
                dst[l + 32] = d * static_cast<float>(sc[s + 2]) * static_cast<float>(q1);
                dst[l + 64] = d * static_cast<float>(sc[s + 4]) * static_cast<float>(q2);
                dst[l + 96] = d * static_cast<float>(sc[s + 6]) * static_cast<float>(q3);
            }
        }
    }
}

}  // namespace tern
