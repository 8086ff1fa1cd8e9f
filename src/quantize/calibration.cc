// AWQ-style scale search (see calibration.h).
#include "quantize/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "quant/dequantize.h"
#include "quant/quantize.h"

namespace tern {
namespace {

using Floats = std::vector<float>;

// Matrices that read one input, the statistics of that input, and the tensor that produces it.
struct ScaleGroup {
    std::string stats_key;
    std::vector<std::string> matrices;
    std::string producer;  // divided by the scales: a norm weight (per element) or a matrix (per row)
};

struct GroupMatrix {
    std::string name;
    DType type;
    int64_t row_length;
    const Floats* values;
};

// Quantizes one block of scaled weights `w` clipped to c * max|w| for each c on a grid and keeps the clipping with
// the least activation-weighted error sum_j E[x_j^2] ((w_j - Q(w)_j) / s_j)^2 (AWQ's clipping search); returns it.
double clip_block(DType type, float* w, int64_t block, const float* scales, const double* mean_squares, bool write) {
    float clipped[256], restored[256], best[256];
    alignas(16) uint8_t packed[512];
    float max_abs = 0.0f;
    for (int64_t j = 0; j < block; ++j) max_abs = std::max(max_abs, std::abs(w[j]));
    double best_error = INFINITY;
    for (int step = 0; step <= 10; ++step) {
        const float limit = max_abs * (1.0f - 0.05f * static_cast<float>(step));
        for (int64_t j = 0; j < block; ++j) clipped[j] = std::clamp(w[j], -limit, limit);
        quantize_row(type, clipped, packed, block);
        dequantize_row(type, packed, restored, block);
        double error = 0.0;
        for (int64_t j = 0; j < block; ++j) {
            const double diff = (w[j] - restored[j]) / scales[j];
            error += mean_squares[j] * diff * diff;
        }
        if (error < best_error) best_error = error, std::copy(clipped, clipped + block, best);
    }
    if (write) std::copy(best, best + block, w);
    return best_error;
}

// The weighted error of the matrix after scaling its columns by `scales`; with `write`, the matrix (already scaled)
// is replaced by its best clipping.
double scaled_error(const GroupMatrix& matrix, Floats* values, const Floats& scales,
                    const std::vector<double>& mean_squares, bool write, ThreadPool* pool) {
    const int64_t length = matrix.row_length;
    const int64_t block = dtype_traits(matrix.type).block_size;
    const int64_t num_rows = static_cast<int64_t>(values->size()) / length;
    std::vector<double> partial(static_cast<size_t>(pool->num_threads()), 0.0);
    pool->parallel_for(num_rows, [&](int64_t begin, int64_t end, int thread_idx) {
        Floats scaled(static_cast<size_t>(length));
        for (int64_t row = begin; row < end; ++row) {
            float* w = values->data() + row * length;
            for (int64_t j = 0; j < length; ++j) scaled[j] = write ? w[j] : w[j] * scales[j];
            for (int64_t col = 0; col < length; col += block) {
                partial[static_cast<size_t>(thread_idx)] += clip_block(
                    matrix.type, scaled.data() + col, block, scales.data() + col, mean_squares.data() + col, write);
            }
            if (write) std::copy(scaled.begin(), scaled.end(), w);
        }
    });
    double total = 0.0;
    for (double value : partial) total += value;
    return total;
}

// s_j = mean|x_j|^alpha, normalised so that max * min = 1 (AWQ), kept away from zero.
Floats scales_for(const std::vector<double>& mean_abs, double alpha) {
    Floats scales(mean_abs.size());
    for (size_t j = 0; j < mean_abs.size(); ++j)
        scales[j] = static_cast<float>(std::pow(std::max(mean_abs[j], 1e-8), alpha));
    const auto [lo, hi] = std::minmax_element(scales.begin(), scales.end());
    const float norm = std::sqrt(*lo * *hi);
    for (float& scale : scales) scale = std::clamp(scale / norm, 1e-4f, 1e4f);
    return scales;
}

std::vector<ScaleGroup> scale_groups(int64_t num_layers) {
    std::vector<ScaleGroup> groups;
    for (int64_t layer = 0; layer < num_layers; ++layer) {
        const std::string p = fmt::format("blk.{}.", layer);
        // ffn_down first: its producer ffn_up is itself a member of the ffn_in group searched after it.
        groups.push_back({p + "down_in", {p + "ffn_down.weight"}, p + "ffn_up.weight"});
        groups.push_back(
            {p + "attn_in", {p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"}, p + "attn_norm.weight"});
        groups.push_back({p + "ffn_in", {p + "ffn_gate.weight", p + "ffn_up.weight"}, p + "ffn_norm.weight"});
    }
    return groups;
}

// AWQ searches alpha over [0, 1]; here the grid stops at 0.5: larger exponents lowered the weighted weight error
// further on stories260K but raised held-out perplexity (the kernels also round the scaled activations to int8).
constexpr int kAlphaSteps = 10;
constexpr double kAlphaStep = 0.05;

class AwqSearch {
public:
    AwqSearch(const GgufFile& file, const ActivationStats& stats, QuantPreset preset, const TensorRuleContext& context,
              ThreadPool* pool)
        : file_(file), stats_(stats), preset_(preset), context_(context), pool_(pool) {}

    Status run(const ScaleGroup& group, double* chosen_alpha) {
        const auto found = stats_.inputs.find(group.stats_key);
        if (found == stats_.inputs.end())
            return not_found(fmt::format("calibration statistics lack '{}'", group.stats_key));
        std::vector<GroupMatrix> matrices;
        TERN_RETURN_IF_ERROR(collect(group, found->second.sum_abs.size(), &matrices));
        if (matrices.empty()) return Status::ok();  // nothing in the group is quantized to few bits
        const double count = static_cast<double>(std::max<int64_t>(stats_.num_tokens, 1));
        std::vector<double> mean_abs(found->second.sum_abs), mean_squares(found->second.sum_squares);
        for (double& value : mean_abs) value /= count;
        for (double& value : mean_squares) value /= count;
        double best_error = INFINITY;
        Floats best_scales;
        for (int step = 0; step <= kAlphaSteps; ++step) {
            const double alpha = kAlphaStep * step;
            const Floats scales = scales_for(mean_abs, alpha);
            double error = 0.0;
            for (const GroupMatrix& matrix : matrices) {
                error += scaled_error(matrix, &floats(matrix.name), scales, mean_squares, false, pool_);
            }
            if (error < best_error) best_error = error, best_scales = scales, *chosen_alpha = alpha;
        }
        apply(group, matrices, best_scales);
        for (const GroupMatrix& matrix : matrices) {
            scaled_error(matrix, &floats(matrix.name), best_scales, mean_squares, true, pool_);
        }
        return Status::ok();
    }

    FloatOverrides take() { return std::move(overrides_); }

private:
    Floats& floats(const std::string& name) {
        auto found = overrides_.find(name);
        if (found == overrides_.end()) found = overrides_.emplace(name, tensor_floats(*file_.find_tensor(name))).first;
        return found->second;
    }

    Status collect(const ScaleGroup& group, size_t channels, std::vector<GroupMatrix>* out) {
        const GgufTensorInfo* producer = file_.find_tensor(group.producer);
        if (producer == nullptr) return not_found(fmt::format("{}: no tensor '{}'", file_.path(), group.producer));
        for (const std::string& name : group.matrices) {
            const GgufTensorInfo* tensor = file_.find_tensor(name);
            if (tensor == nullptr) return not_found(fmt::format("{}: no tensor '{}'", file_.path(), name));
            if (tensor->dims.size() != 2 || static_cast<size_t>(tensor->dims[0]) != channels) {
                return invalid_argument(fmt::format("calibration statistics do not match tensor '{}'", name));
            }
            const DType type = choose_tensor_type(preset_, name, tensor->dims, context_).value_or(tensor->type);
            if (type == DType::kF32 || type == DType::kF16 || type == DType::kBF16) continue;
            out->push_back({name, type, tensor->dims[0], &floats(name)});
        }
        return Status::ok();
    }

    // Folds 1/s into the producer and s into the matrices (all of them, so the group stays exact in floats).
    void apply(const ScaleGroup& group, const std::vector<GroupMatrix>& matrices, const Floats& scales) {
        const int64_t channels = static_cast<int64_t>(scales.size());
        for (const std::string& name : group.matrices) {
            Floats& values = floats(name);
            for (size_t idx = 0; idx < values.size(); ++idx) values[idx] *= scales[idx % channels];
        }
        Floats& producer = floats(group.producer);
        const int64_t row_length = static_cast<int64_t>(producer.size()) / channels;  // 1 for a norm weight
        for (int64_t channel = 0; channel < channels; ++channel) {
            for (int64_t idx = 0; idx < row_length; ++idx) producer[channel * row_length + idx] /= scales[channel];
        }
    }

    const GgufFile& file_;
    const ActivationStats& stats_;
    QuantPreset preset_;
    TensorRuleContext context_;
    ThreadPool* pool_;
    FloatOverrides overrides_;
};

}  // namespace

Result<FloatOverrides> awq_scaled_weights(const GgufFile& file, const ActivationStats& stats, QuantPreset preset,
                                          const TensorRuleContext& context, ThreadPool* pool,
                                          std::map<std::string, double>* chosen_alphas) {
    AwqSearch search(file, stats, preset, context, pool);
    for (const ScaleGroup& group : scale_groups(context.num_layers)) {
        double alpha = -1.0;  // stays negative when no matrix of the group is quantized to few bits
        TERN_RETURN_IF_ERROR(search.run(group, &alpha));
        if (chosen_alphas != nullptr && alpha >= 0.0) (*chosen_alphas)[group.stats_key] = alpha;
    }
    return search.take();
}

}  // namespace tern
