#include "base/check.h"
#include "base/log.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"

namespace tern::kernels {
namespace {

const KernelTable& ref_table() {
    static const KernelTable table = [] {
        KernelTable ref_kernels;
        ref_kernels.isa = Isa::kRef;
        ref_kernels.matmul_q4_0x16 = ref::matmul_q4_0x16;
        ref_kernels.matmul_q8_0x16 = ref::matmul_q8_0x16;
        ref_kernels.matmul_q6_kx16 = ref::matmul_q6_kx16;
        ref_kernels.matmul_q4_kx16 = ref::matmul_q4_kx16;
        ref_kernels.matmul_q5_kx16 = ref::matmul_q5_kx16;
        ref_kernels.matmul_f32 = ref::matmul_f32;
        ref_kernels.matmul_f16 = ref::matmul_f16;
        ref_kernels.matmul_bf16 = ref::matmul_bf16;
        ref_kernels.quantize_activations = ref::quantize_activations;
        ref_kernels.sum_f32 = ref::sum_f32;
        ref_kernels.attention_group = ref::attention_group;
        ref_kernels.attention_queries = attend_each_query<ref::attention_group>;
        ref_kernels.rms_norm = ref::rms_norm;
        ref_kernels.silu_mul = ref::silu_mul;
        ref_kernels.gelu_mul = ref::gelu_mul;
        ref_kernels.rope = ref::rope;
        return ref_kernels;
    }();
    return table;
}

}  // namespace

const KernelTable* kernel_table(Isa isa) {
    if (!cpu_supports(isa)) return nullptr;
    switch (isa) {
        case Isa::kRef: return &ref_table();
        case Isa::kAvx2: return avx2::table();
        case Isa::kAvx512: return avx512::table();
    }
    return nullptr;
}

const KernelTable& kernels() {
    static const KernelTable& table = [] () -> const KernelTable& {
        Isa isa = select_isa();
        const KernelTable* chosen = kernel_table(isa);
        if (chosen == nullptr) chosen = &ref_table();
        log_info("kernels: {} (cpu supports avx512-vnni: {}, avx2: {})", isa_name(chosen->isa),
                 cpu_supports(Isa::kAvx512) ? "yes" : "no", cpu_supports(Isa::kAvx2) ? "yes" : "no");
        return *chosen;
    }();
    return table;
}

void matmul(const KernelTable& table, const PackedWeights& weights, const Activations& activations,
            int64_t unit_begin, int64_t unit_end, float* y, int64_t y_stride, float* scratch) {
    switch (weights.layout) {
        case WeightLayout::kQ4_0x16:
            return table.matmul_q4_0x16(weights, activations, unit_begin, unit_end, y, y_stride);
        case WeightLayout::kQ8_0x16:
            return table.matmul_q8_0x16(weights, activations, unit_begin, unit_end, y, y_stride);
        case WeightLayout::kQ6_Kx16:
            return table.matmul_q6_kx16(weights, activations, unit_begin, unit_end, y, y_stride);
        case WeightLayout::kQ4_Kx16:
            return table.matmul_q4_kx16(weights, activations, unit_begin, unit_end, y, y_stride);
        case WeightLayout::kQ5_Kx16:
            return table.matmul_q5_kx16(weights, activations, unit_begin, unit_end, y, y_stride);
        case WeightLayout::kRowMajor:
            break;
    }
    if (weights.view.type == DType::kF32) {
        return table.matmul_f32(weights.view, activations, unit_begin, unit_end, y, y_stride);
    }
    if (weights.view.type == DType::kF16) {
        return table.matmul_f16(weights.view, activations, unit_begin, unit_end, y, y_stride);
    }
    if (weights.view.type == DType::kBF16) {
        return table.matmul_bf16(weights.view, activations, unit_begin, unit_end, y, y_stride);
    }
    const DType type = weights.view.type;
    if (type == DType::kQ6_K || type == DType::kQ4_K || type == DType::kQ5_K) {
        return ref::matmul_dequantized_q8(type, weights.view, activations, unit_begin, unit_end, y, y_stride);
    }
    ref::matmul_rows(weights.view, unit_begin, unit_end, activations.f32, activations.f32_stride,
                     activations.num_tokens, y, y_stride, scratch);
}

}  // namespace tern::kernels
