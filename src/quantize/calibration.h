// Calibrated quantization in the manner of AWQ (Lin et al., 2023): activation statistics per input channel of
// each linear layer are gathered by running the model on calibration text; then, per group of matrices that
// read the same input, a per-channel scale s = mean|x|^alpha is searched (alpha on a grid) to minimise the
// activation-weighted quantization error. The matrices are stored as Q(W diag(s)) and the tensor that produces
// their input is divided by s (the RMSNorm weight before attn_q/k/v and ffn_gate/up; ffn_up's rows before
// ffn_down), so the model computes the same function in exact arithmetic while salient channels lose less.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "formats/gguf.h"
#include "quantize/tensor_rules.h"

namespace tern {

struct ChannelStats {
    std::vector<double> sum_abs;      // sum over tokens of |x_j|
    std::vector<double> sum_squares;  // sum over tokens of x_j^2
};

struct ActivationStats {
    int64_t num_tokens = 0;
    // Keyed by "blk.N.attn_in" (attn_norm output), "blk.N.ffn_in" (ffn_norm output), "blk.N.down_in" (ffn_down input).
    std::map<std::string, ChannelStats> inputs;
};

// Runs a float forward pass of the model in `file` over windows of `context` tokens (the first token of each
// window replaced by `bos_id` when it is >= 0) and sums each linear layer input's per-channel statistics.
Result<ActivationStats> collect_activation_stats(const GgufFile& file, std::span<const int32_t> tokens, int64_t context,
                                                 int32_t bos_id, ThreadPool* pool);

// Statistics as a GGUF of f32 tensors "<key>.sum_abs" and "<key>.sum_squares" plus tern.calib.num_tokens.
Status save_activation_stats(const ActivationStats& stats, const std::string& path);
Result<ActivationStats> load_activation_stats(const std::string& path);

// The AWQ-scaled float weights that replace the file's tensors: scaled matrices and the divided producers.
// Tensors not in the map keep their values. `chosen_alphas` (optional) receives each group's alpha.
using FloatOverrides = std::map<std::string, std::vector<float>>;
Result<FloatOverrides> awq_scaled_weights(const GgufFile& file, const ActivationStats& stats, QuantPreset preset,
                                          const TensorRuleContext& context, ThreadPool* pool,
                                          std::map<std::string, double>* chosen_alphas = nullptr);

// A whole tensor dequantized to floats.
std::vector<float> tensor_floats(const GgufTensorInfo& tensor);

}  // namespace tern
