// Reference quantization of Q4_K, Q5_K and Q6_K, following ggml's quantize_row_q{4,5,6}_K_ref step by step:
// each sub-block gets a least-squares scale (and for Q4_K/Q5_K a min) from a small search, the per-sub-block
// values are then quantized again to 6 or 8 bits against one half-precision super-block scale, and finally every
// weight is re-rounded against the scale it will actually be decoded with. Float expressions keep ggml's
// evaluation order because the searches compare sums that differ in the last bits.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/fp16.h"
#include "quant/internal.h"
#include "quant/quantize.h"

namespace tern {
namespace {

using quant_internal::nearest_int;
using quant_internal::num_blocks;

constexpr float kGroupMaxEps = 1e-15f;  // below this a group counts as all zero

// Parameters of the scale search for one K type: levels 0..nmax, and nstep + 1 trial inverse scales
// (rmin + rdelta * step + nmax) / (max - min).
struct AffineSearch {
    int nmax;
    float rmin;
    float rdelta;
    int nstep;
};

float weighted_error(int n, const float* x, const float* weights, const uint8_t* levels, float scale, float min) {
    float error = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float diff = scale * static_cast<float>(levels[i]) + min - x[i];
        error += weights[i] * (diff * diff);
    }
    return error;
}

void round_levels(int n, int nmax, const float* x, float min, float inverse, uint8_t* levels) {
    for (int i = 0; i < n; ++i) {
        levels[i] = static_cast<uint8_t>(std::clamp(nearest_int(inverse * (x[i] - min)), 0, nmax));
    }
}

// Weighted least-squares scale and min (clamped to min <= 0) for fixed levels; false when they are degenerate.
bool fit_levels(int n, const float* x, const float* weights, const uint8_t* levels, float sum_w, float sum_x,
                float* scale, float* min) {
    float sum_l = 0.0f;
    float sum_l2 = 0.0f;
    float sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float w = weights[i];
        const auto l = static_cast<float>(levels[i]);
        sum_l += w * l;
        sum_l2 += w * l * l;
        sum_xl += w * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) return false;
    *scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    *min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (*min > 0) {
        *min = 0;
        *scale = sum_xl / sum_l2;
    }
    return true;
}

// Scale and min (x ~ scale * level + min, min <= 0) minimising the weighted squared error: start from the full
// range, then refit from each trial scale and keep the best. Returns the scale and stores -min in *neg_min.
// ggml's make_qkx2_quants with use_mad = false.
float fit_affine(const AffineSearch& search, int n, const float* x, const float* weights, uint8_t* levels,
                 float* neg_min, uint8_t* trial_levels) {
    float min = x[0];
    float max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        min = std::min(min, x[i]);
        max = std::max(max, x[i]);
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::memset(levels, 0, static_cast<size_t>(n));
        *neg_min = -min;
        return 0.0f;
    }
    const float first_inverse = static_cast<float>(search.nmax) / (max - min);
    float scale = 1.0f / first_inverse;
    round_levels(n, search.nmax, x, min, first_inverse, levels);
    float best_error = weighted_error(n, x, weights, levels, scale, min);
    // As in ggml, a trial that wins moves `min`, and later trials measure from the moved min.
    for (int step = 0; step <= search.nstep; ++step) {
        const float inverse =
            (search.rmin + search.rdelta * static_cast<float>(step) + static_cast<float>(search.nmax)) / (max - min);
        round_levels(n, search.nmax, x, min, inverse, trial_levels);
        float trial_scale = 0.0f;
        float trial_min = 0.0f;
        if (!fit_levels(n, x, weights, trial_levels, sum_w, sum_x, &trial_scale, &trial_min)) continue;
        const float error = weighted_error(n, x, weights, trial_levels, trial_scale, trial_min);
        if (error < best_error) {
            std::memcpy(levels, trial_levels, static_cast<size_t>(n));
            best_error = error;
            scale = trial_scale;
            min = trial_min;
        }
    }
    *neg_min = -min;
    return scale;
}

// Fills d, dmin, the packed scales and levels[256] (0..nmax) of one Q4_K/Q5_K super-block.
void quantize_super_block_k(const AffineSearch& search, const float* x, uint16_t* d, uint16_t* dmin,
                            uint8_t* packed, uint8_t* levels) {
    constexpr int kSubBlocks = kQK_K / 32;
    float scales[kSubBlocks];
    float mins[kSubBlocks];
    float weights[32];
    uint8_t trial_levels[32];
    float max_scale = 0.0f;
    float max_min = 0.0f;
    for (int j = 0; j < kSubBlocks; ++j) {
        const float* sub = x + 32 * j;
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; ++l) sum_x2 += sub[l] * sub[l];
        const float rms = std::sqrt(sum_x2 / 32.0f);
        for (int l = 0; l < 32; ++l) weights[l] = rms + std::fabs(sub[l]);
        scales[j] = fit_affine(search, 32, sub, weights, levels + 32 * j, &mins[j], trial_levels);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inverse_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inverse_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    std::memset(packed, 0, kKScaleSize);
    for (int j = 0; j < kSubBlocks; ++j) {
        // ggml stores nearest_int into a uint8_t before clamping, so a negative scale wraps and then clamps to 63.
        const auto scale_level = static_cast<uint8_t>(nearest_int(inverse_scale * scales[j]));
        const auto min_level = static_cast<uint8_t>(nearest_int(inverse_min * mins[j]));
        pack_scale_min_k4(j, std::min<uint8_t>(63, scale_level), std::min<uint8_t>(63, min_level), packed);
    }
    *d = fp32_to_fp16(max_scale / 63.0f);
    *dmin = fp32_to_fp16(max_min / 63.0f);
    for (int j = 0; j < kSubBlocks; ++j) {
        uint8_t scale_level = 0;
        uint8_t min_level = 0;
        unpack_scale_min_k4(j, packed, &scale_level, &min_level);
        const float sub_d = fp16_to_fp32(*d) * static_cast<float>(scale_level);
        if (sub_d == 0.0f) continue;
        const float sub_min = fp16_to_fp32(*dmin) * static_cast<float>(min_level);
        for (int l = 0; l < 32; ++l) {
            const int level = nearest_int((x[32 * j + l] + sub_min) / sub_d);
            levels[32 * j + l] = static_cast<uint8_t>(std::clamp(level, 0, search.nmax));
        }
    }
}

// Symmetric fit for Q6_K: levels in [-nmax, nmax - 1] stored biased by nmax, weights x^2, and 18 nearby initial
// scales refit by weighted least squares. ggml's make_qx_quants with rmse_type = 1 and no importance weights.
float fit_symmetric(int n, int nmax, const float* x, uint8_t* levels) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int i = 0; i < n; ++i) {
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        std::memset(levels, 0, static_cast<size_t>(n));
        return 0.0f;
    }
    auto level_of = [nmax](float inverse, float value) {
        return std::clamp(nearest_int(inverse * value), -nmax, nmax - 1);
    };
    auto accumulate = [&](float inverse, float* sum_lx, float* sum_l2) {
        *sum_lx = 0.0f;
        *sum_l2 = 0.0f;
        for (int i = 0; i < n; ++i) {
            const auto l = static_cast<float>(level_of(inverse, x[i]));
            const float w = x[i] * x[i];
            *sum_lx += w * x[i] * l;
            *sum_l2 += w * l * l;
        }
    };
    auto store = [&](float inverse) {
        for (int i = 0; i < n; ++i) levels[i] = static_cast<uint8_t>(level_of(inverse, x[i]) + nmax);
    };
    float sum_lx = 0.0f;
    float sum_l2 = 0.0f;
    const float first_inverse = static_cast<float>(-nmax) / max;
    accumulate(first_inverse, &sum_lx, &sum_l2);
    store(first_inverse);
    float scale = sum_l2 != 0.0f ? sum_lx / sum_l2 : 0.0f;
    float best = scale * sum_lx;
    for (int step = -9; step <= 9; ++step) {
        if (step == 0) continue;
        const float inverse = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
        accumulate(inverse, &sum_lx, &sum_l2);
        if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
            store(inverse);
            scale = sum_lx / sum_l2;
            best = scale * sum_lx;
        }
    }
    return scale;
}

void pack_q5_k_levels(const uint8_t* levels, BlockQ5_K* block) {
    std::memset(block->qh, 0, sizeof(block->qh));
    for (int chunk = 0; chunk < kQK_K / 64; ++chunk) {
        const uint8_t* run = levels + 64 * chunk;
        uint8_t* ql = block->qs + 32 * chunk;
        for (int l = 0; l < 32; ++l) {
            const int low = run[l];
            const int high = run[l + 32];
            ql[l] = static_cast<uint8_t>((low & 0x0f) | (high & 0x0f) << 4);
            block->qh[l] |= static_cast<uint8_t>((low >> 4) << (2 * chunk) | (high >> 4) << (2 * chunk + 1));
        }
    }
}

void pack_q6_k_levels(const uint8_t* levels, BlockQ6_K* block) {
    for (int half = 0; half < 2; ++half) {
        const uint8_t* run = levels + 128 * half;
        uint8_t* ql = block->ql + 64 * half;
        uint8_t* qh = block->qh + 32 * half;
        for (int l = 0; l < 32; ++l) {
            const int q0 = run[l];
            const int q1 = run[l + 32];
            const int q2 = run[l + 64];
            const int q3 = run[l + 96];
            ql[l] = static_cast<uint8_t>((q0 & 0x0f) | (q2 & 0x0f) << 4);
            ql[l + 32] = static_cast<uint8_t>((q1 & 0x0f) | (q3 & 0x0f) << 4);
            qh[l] = static_cast<uint8_t>((q0 >> 4) | (q1 >> 4) << 2 | (q2 >> 4) << 4 | (q3 >> 4) << 6);
        }
    }
}

}  // namespace

void quantize_row_q4_k(const float* src, BlockQ4_K* dst, int64_t num_elements) {
    const AffineSearch search{15, -1.0f, 0.1f, 20};
    const int64_t count = num_blocks(num_elements, kQK_K);
    uint8_t levels[kQK_K];
    for (int64_t b = 0; b < count; ++b, src += kQK_K) {
        quantize_super_block_k(search, src, &dst[b].d, &dst[b].dmin, dst[b].scales, levels);
        for (int chunk = 0; chunk < kQK_K / 64; ++chunk) {
            for (int l = 0; l < 32; ++l) {
                dst[b].qs[32 * chunk + l] =
                    static_cast<uint8_t>(levels[64 * chunk + l] | levels[64 * chunk + 32 + l] << 4);
            }
        }
    }
}

void quantize_row_q5_k(const float* src, BlockQ5_K* dst, int64_t num_elements) {
    const AffineSearch search{31, -0.5f, 0.1f, 15};
    const int64_t count = num_blocks(num_elements, kQK_K);
    uint8_t levels[kQK_K];
    for (int64_t b = 0; b < count; ++b, src += kQK_K) {
        quantize_super_block_k(search, src, &dst[b].d, &dst[b].dmin, dst[b].scales, levels);
        pack_q5_k_levels(levels, &dst[b]);
    }
}

void quantize_row_q6_k(const float* src, BlockQ6_K* dst, int64_t num_elements) {
    const int64_t count = num_blocks(num_elements, kQK_K);
    uint8_t levels[kQK_K];
    float scales[kQK_K / 16];
    for (int64_t b = 0; b < count; ++b, src += kQK_K) {
        float max_scale = 0.0f;
        float max_abs_scale = 0.0f;
        for (int s = 0; s < kQK_K / 16; ++s) {
            scales[s] = fit_symmetric(16, 32, src + 16 * s, levels + 16 * s);
            if (std::fabs(scales[s]) > max_abs_scale) {
                max_abs_scale = std::fabs(scales[s]);
                max_scale = scales[s];
            }
        }
        BlockQ6_K& block = dst[b];
        if (max_abs_scale < kGroupMaxEps) {
            std::memset(&block, 0, sizeof(block));
            continue;
        }
        // Mapping the largest scale to -128 rather than +127 gains one level; d is then negative.
        const float inverse = -128.0f / max_scale;
        block.d = fp32_to_fp16(1.0f / inverse);
        for (int s = 0; s < kQK_K / 16; ++s) {
            block.scales[s] = static_cast<int8_t>(std::min(127, nearest_int(inverse * scales[s])));
        }
        for (int s = 0; s < kQK_K / 16; ++s) {
            const float sub_d = fp16_to_fp32(block.d) * static_cast<float>(block.scales[s]);
            if (sub_d == 0.0f) continue;
            for (int l = 0; l < 16; ++l) {
                const int level = std::clamp(nearest_int(src[16 * s + l] / sub_d), -32, 31);
                levels[16 * s + l] = static_cast<uint8_t>(level + 32);
            }
        }
        pack_q6_k_levels(levels, &block);
    }
}

}  // namespace tern
