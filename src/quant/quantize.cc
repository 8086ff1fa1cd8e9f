// Reference quantization of the plain and 32-element block types, plus the dispatcher. Inputs must be finite.
// The conversions below deliberately mirror ggml's: d and 1/d are computed from the unrounded scale, and the 4- and
// 5-bit types round by truncating x + 0.5 (half away from the block's extreme) while Q8_0 uses roundf.
#include "quant/dequantize.h"
#include "quant/quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "quant/internal.h"

namespace tern {
namespace {

using quant_internal::num_blocks;

// The value of largest magnitude in the block, keeping its sign (the first one wins a tie).
float signed_abs_max(const float* x, int n) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

void min_max(const float* x, int n, float* min, float* max) {
    *min = FLT_MAX;
    *max = -FLT_MAX;
    for (int j = 0; j < n; ++j) {
        if (x[j] < *min) *min = x[j];
        if (x[j] > *max) *max = x[j];
    }
}

// The 4- and 5-bit legacy types truncate toward zero after adding the bias plus one half; the values are never
// negative by more than a rounding error, so truncation is the same as ggml's conversion to int8_t.
int truncate_to_int(float value) { return static_cast<int>(value); }

void store_le32(uint32_t value, uint8_t* bytes) {
    for (int i = 0; i < 4; ++i) bytes[i] = static_cast<uint8_t>(value >> (8 * i));
}

}  // namespace

void quantize_row_f16(const float* src, uint16_t* dst, int64_t num_elements) {
    for (int64_t i = 0; i < num_elements; ++i) dst[i] = fp32_to_fp16(src[i]);
}

void quantize_row_bf16(const float* src, uint16_t* dst, int64_t num_elements) {
    for (int64_t i = 0; i < num_elements; ++i) dst[i] = fp32_to_bf16(src[i]);
}

void quantize_row_q4_0(const float* src, BlockQ4_0* dst, int64_t num_elements) {
    const int64_t count = num_blocks(num_elements, kQK);
    for (int64_t b = 0; b < count; ++b, src += kQK) {
        // The extreme value maps to -8 exactly, which uses the one level the positive side lacks.
        const float d = signed_abs_max(src, kQK) / -8.0f;
        const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
        dst[b].d = fp32_to_fp16(d);
        for (int j = 0; j < kQK / 2; ++j) {
            const int low = std::min(15, truncate_to_int(src[j] * inverse + 8.5f));
            const int high = std::min(15, truncate_to_int(src[j + kQK / 2] * inverse + 8.5f));
            dst[b].qs[j] = static_cast<uint8_t>(low | high << 4);
        }
    }
}

void quantize_row_q4_1(const float* src, BlockQ4_1* dst, int64_t num_elements) {
    const int64_t count = num_blocks(num_elements, kQK);
    for (int64_t b = 0; b < count; ++b, src += kQK) {
        float min = 0.0f;
        float max = 0.0f;
        min_max(src, kQK, &min, &max);
        const float d = (max - min) / 15.0f;
        const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
        dst[b].d = fp32_to_fp16(d);
        dst[b].m = fp32_to_fp16(min);
        for (int j = 0; j < kQK / 2; ++j) {
            const int low = std::min(15, truncate_to_int((src[j] - min) * inverse + 0.5f));
            const int high = std::min(15, truncate_to_int((src[j + kQK / 2] - min) * inverse + 0.5f));
            dst[b].qs[j] = static_cast<uint8_t>(low | high << 4);
        }
    }
}

void quantize_row_q5_0(const float* src, BlockQ5_0* dst, int64_t num_elements) {
    const int64_t count = num_blocks(num_elements, kQK);
    for (int64_t b = 0; b < count; ++b, src += kQK) {
        const float d = signed_abs_max(src, kQK) / -16.0f;
        const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
        dst[b].d = fp32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            const int low = std::min(31, truncate_to_int(src[j] * inverse + 16.5f));
            const int high = std::min(31, truncate_to_int(src[j + kQK / 2] * inverse + 16.5f));
            dst[b].qs[j] = static_cast<uint8_t>((low & 0x0f) | (high & 0x0f) << 4);
            qh |= static_cast<uint32_t>(low >> 4 & 1) << j;
            qh |= static_cast<uint32_t>(high >> 4 & 1) << (j + kQK / 2);
        }
        store_le32(qh, dst[b].qh);
    }
}

void quantize_row_q5_1(const float* src, BlockQ5_1* dst, int64_t num_elements) {
    const int64_t count = num_blocks(num_elements, kQK);
    for (int64_t b = 0; b < count; ++b, src += kQK) {
        float min = 0.0f;
        float max = 0.0f;
        min_max(src, kQK, &min, &max);
        const float d = (max - min) / 31.0f;
        const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
        dst[b].d = fp32_to_fp16(d);
        dst[b].m = fp32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            // ggml has no clamp here; (max - min) * (1 / d) cannot round past 31.5.
            const int low = truncate_to_int((src[j] - min) * inverse + 0.5f) & 0xff;
            const int high = truncate_to_int((src[j + kQK / 2] - min) * inverse + 0.5f) & 0xff;
            dst[b].qs[j] = static_cast<uint8_t>((low & 0x0f) | (high & 0x0f) << 4);
            qh |= static_cast<uint32_t>(low >> 4 & 1) << j;
            qh |= static_cast<uint32_t>(high >> 4 & 1) << (j + kQK / 2);
        }
        store_le32(qh, dst[b].qh);
    }
}

void quantize_row_q8_0(const float* src, BlockQ8_0* dst, int64_t num_elements) {
    const int64_t count = num_blocks(num_elements, kQK);
    for (int64_t b = 0; b < count; ++b, src += kQK) {
        float amax = 0.0f;
        for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(src[j]));
        const float d = amax / 127.0f;
        const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
        dst[b].d = fp32_to_fp16(d);
        // roundf (ties away from zero), unlike the K types' round-half-even.
        for (int j = 0; j < kQK; ++j) dst[b].qs[j] = static_cast<int8_t>(std::round(src[j] * inverse));
    }
}

// Every type tern can read it can also write.
bool can_quantize(DType type) { return can_dequantize(type); }

void quantize_row(DType type, const float* src, void* dst, int64_t num_elements) {
    TERN_CHECK(can_quantize(type)) << "no quantizer for " << dtype_name(type);
    TERN_CHECK(reinterpret_cast<uintptr_t>(dst) % 2 == 0) << "quantized data must be 2-byte aligned";
    num_blocks(num_elements, dtype_traits(type).block_size);
    switch (type) {
        case DType::kF32:
            std::memcpy(dst, src, static_cast<size_t>(num_elements) * sizeof(float));
            return;
        case DType::kF16: return quantize_row_f16(src, static_cast<uint16_t*>(dst), num_elements);
        case DType::kBF16: return quantize_row_bf16(src, static_cast<uint16_t*>(dst), num_elements);
        case DType::kQ4_0: return quantize_row_q4_0(src, static_cast<BlockQ4_0*>(dst), num_elements);
        case DType::kQ4_1: return quantize_row_q4_1(src, static_cast<BlockQ4_1*>(dst), num_elements);
        case DType::kQ5_0: return quantize_row_q5_0(src, static_cast<BlockQ5_0*>(dst), num_elements);
        case DType::kQ5_1: return quantize_row_q5_1(src, static_cast<BlockQ5_1*>(dst), num_elements);
        case DType::kQ8_0: return quantize_row_q8_0(src, static_cast<BlockQ8_0*>(dst), num_elements);
        case DType::kQ4_K: return quantize_row_q4_k(src, static_cast<BlockQ4_K*>(dst), num_elements);
        case DType::kQ5_K: return quantize_row_q5_k(src, static_cast<BlockQ5_K*>(dst), num_elements);
        case DType::kQ6_K: return quantize_row_q6_k(src, static_cast<BlockQ6_K*>(dst), num_elements);
        default: return;
    }
}

int64_t quantize_rows(DType type, const float* src, void* dst, int64_t num_rows, int64_t row_length) {
    TERN_CHECK(num_rows >= 0) << "negative row count " << num_rows;
    const int64_t bytes_per_row = row_bytes(type, row_length);
    auto* out = static_cast<uint8_t*>(dst);
    for (int64_t r = 0; r < num_rows; ++r) {
        quantize_row(type, src + r * row_length, out + r * bytes_per_row, row_length);
    }
    return num_rows * bytes_per_row;
}

}  // namespace tern
