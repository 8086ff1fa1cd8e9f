// tern quantize: rewrites a GGUF model with its weight matrices in another type. Metadata is copied (with
// general.file_type updated), each matrix is dequantized from whatever type it has and requantized by the
// per-tensor rules of tensor_rules.h; tensors are streamed one at a time, rows split over the thread pool.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "base/status.h"
#include "base/thread_pool.h"
#include "quantize/calibration.h"
#include "quantize/tensor_rules.h"

namespace tern {

struct QuantizeOptions {
    QuantPreset preset = QuantPreset::kQ8_0;
    // Called after each tensor is written with (tensors done, tensor count, name); may be empty.
    std::function<void(int64_t, int64_t, const std::string&)> on_tensor_done;
    // Activation statistics of calibration text: when set, matrices are AWQ-scaled before quantization.
    const ActivationStats* stats = nullptr;
};

struct QuantizeSummary {
    int64_t bytes_before = 0;         // input file size
    int64_t bytes_after = 0;          // output file size
    int64_t tensor_bytes_before = 0;  // tensor data only
    int64_t tensor_bytes_after = 0;
    std::map<std::string, int64_t> type_counts;  // output tensor type name -> count
    int64_t num_requantized = 0;                 // tensors whose bytes were recomputed
    int64_t num_fallbacks = 0;                   // matrices whose rows did not fit the preset's block size
    std::map<std::string, double> calib_alphas;  // the AWQ exponent chosen per scaled input (with stats)
};

Result<QuantizeSummary> quantize_model(const std::string& input_path, const std::string& output_path,
                                       const QuantizeOptions& options, ThreadPool* pool);

}  // namespace tern
