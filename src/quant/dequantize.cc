#include "quant/dequantize.h"

#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "quant/internal.h"

namespace tern {
namespace {

using quant_internal::num_blocks;

uint32_t load_le32(const uint8_t* bytes) {
    return static_cast<uint32_t>(bytes[0]) | static_cast<uint32_t>(bytes[1]) << 8 |
           static_cast<uint32_t>(bytes[2]) << 16 | static_cast<uint32_t>(bytes[3]) << 24;
}

// Fifth bit of element j (low half) or j + 16 (high half), already in place as 0 or 16.
int high_bit(uint32_t qh, int element) { return static_cast<int>((qh >> element) & 1u) << 4; }

}  // namespace

void dequantize_row_f16(const uint16_t* src, float* dst, int64_t num_elements) {
    for (int64_t i = 0; i < num_elements; ++i) dst[i] = fp16_to_fp32(src[i]);
}

void dequantize_row_bf16(const uint16_t* src, float* dst, int64_t num_elements) {
    for (int64_t i = 0; i < num_elements; ++i) dst[i] = bf16_to_fp32(src[i]);
}

void dequantize_row_q4_0(const BlockQ4_0* src, float* dst, int64_t num_elements) {
    const int64_t count = num_blocks(num_elements, kQK);
    for (int64_t b = 0; b < count; ++b, dst += kQK) {
        const float d = fp16_to_fp32(src[b].d);
        for (int j = 0; j < kQK / 2; ++j) {
            const int low = (src[b].qs[j] & 0x0f) - 8;
            const int high = (src[b].qs[j] >> 4) - 8;
            dst[j] = static_cast<float>(low) * d;
            dst[j + kQK / 2] = static_cast<float>(high) * d;
        }
    }
}

void dequantize_row_q4_1(const BlockQ4_1* src, float* dst, int64_t num_elements) {
    const int64_t count = num_blocks(num_elements, kQK);
    for (int64_t b = 0; b < count; ++b, dst += kQK) {
        const float d = fp16_to_fp32(src[b].d);
        const float m = fp16_to_fp32(src[b].m);
        for (int j = 0; j < kQK / 2; ++j) {
            const int low = src[b].qs[j] & 0x0f;
            const int high = src[b].qs[j] >> 4;
            dst[j] = static_cast<float>(low) * d + m;
            dst[j + kQK / 2] = static_cast<float>(high) * d + m;
        }
    }
}

void dequantize_row_q5_0(const BlockQ5_0* src, float* dst, int64_t num_elements) {
    const int64_t count = num_blocks(num_elements, kQK);
    for (int64_t b = 0; b < count; ++b, dst += kQK) {
        const float d = fp16_to_fp32(src[b].d);
        const uint32_t qh = load_le32(src[b].qh);
        for (int j = 0; j < kQK / 2; ++j) {
            const int low = ((src[b].qs[j] & 0x0f) | high_bit(qh, j)) - 16;
            const int high = ((src[b].qs[j] >> 4) | high_bit(qh, j + kQK / 2)) - 16;
            dst[j] = static_cast<float>(low) * d;
            dst[j + kQK / 2] = static_cast<float>(high) * d;
        }
    }
}

void dequantize_row_q5_1(const BlockQ5_1* src, float* dst, int64_t num_elements) {
    const int64_t count = num_blocks(num_elements, kQK);
    for (int64_t b = 0; b < count; ++b, dst += kQK) {
        const float d = fp16_to_fp32(src[b].d);
        const float m = fp16_to_fp32(src[b].m);
        const uint32_t qh = load_le32(src[b].qh);
        for (int j = 0; j < kQK / 2; ++j) {
            const int low = (src[b].qs[j] & 0x0f) | high_bit(qh, j);
            const int high = (src[b].qs[j] >> 4) | high_bit(qh, j + kQK / 2);
            dst[j] = static_cast<float>(low) * d + m;
            dst[j + kQK / 2] = static_cast<float>(high) * d + m;
        }
    }
}

void dequantize_row_q8_0(const BlockQ8_0* src, float* dst, int64_t num_elements) {
    const int64_t count = num_blocks(num_elements, kQK);
    for (int64_t b = 0; b < count; ++b, dst += kQK) {
        const float d = fp16_to_fp32(src[b].d);
        for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(src[b].qs[j]) * d;
    }
}

bool can_dequantize(DType type) {
    const std::optional<DTypeTraits> traits = dtype_traits_of(static_cast<uint32_t>(type));
    return traits && traits->can_dequantize;
}

void dequantize_row(DType type, const void* src, float* dst, int64_t num_elements) {
    TERN_CHECK(can_dequantize(type)) << "no dequantizer for " << dtype_name(type);
    TERN_CHECK(reinterpret_cast<uintptr_t>(src) % 2 == 0) << "quantized data must be 2-byte aligned";
    num_blocks(num_elements, dtype_traits(type).block_size);
    switch (type) {
        case DType::kF32:
            std::memcpy(dst, src, static_cast<size_t>(num_elements) * sizeof(float));
            return;
        case DType::kF16: return dequantize_row_f16(static_cast<const uint16_t*>(src), dst, num_elements);
        case DType::kBF16: return dequantize_row_bf16(static_cast<const uint16_t*>(src), dst, num_elements);
        case DType::kQ4_0: return dequantize_row_q4_0(static_cast<const BlockQ4_0*>(src), dst, num_elements);
        case DType::kQ4_1: return dequantize_row_q4_1(static_cast<const BlockQ4_1*>(src), dst, num_elements);
        case DType::kQ5_0: return dequantize_row_q5_0(static_cast<const BlockQ5_0*>(src), dst, num_elements);
        case DType::kQ5_1: return dequantize_row_q5_1(static_cast<const BlockQ5_1*>(src), dst, num_elements);
        case DType::kQ8_0: return dequantize_row_q8_0(static_cast<const BlockQ8_0*>(src), dst, num_elements);
        case DType::kQ4_K: return dequantize_row_q4_k(static_cast<const BlockQ4_K*>(src), dst, num_elements);
        case DType::kQ5_K: return dequantize_row_q5_k(static_cast<const BlockQ5_K*>(src), dst, num_elements);
        case DType::kQ6_K: return dequantize_row_q6_k(static_cast<const BlockQ6_K*>(src), dst, num_elements);
        default: return;
    }
}

}  // namespace tern
