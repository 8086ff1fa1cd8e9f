#include "quantize/quantizer.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"

namespace tern {
namespace {

TensorRuleContext rule_context(const GgufFile& file) {
    TensorRuleContext context;
    context.has_output = file.find_tensor("output.weight") != nullptr;
    for (const GgufTensorInfo& tensor : file.tensors()) {
        if (tensor.name.size() > 14 && tensor.name.ends_with(".attn_v.weight")) ++context.num_layers;
    }
    return context;
}

Status copy_metadata(const GgufFile& file, QuantPreset preset, GgufWriter* writer) {
    bool has_quant_version = false;
    for (const auto& [key, value] : file.metadata()) {
        if (key == "general.alignment" || key == "general.file_type") continue;
        has_quant_version = has_quant_version || key == "general.quantization_version";
        writer->add(key, value);
    }
    writer->add_u32("general.file_type", preset_file_type(preset));
    if (!has_quant_version) writer->add_u32("general.quantization_version", 2);
    writer->set_alignment(file.alignment());
    return Status::ok();
}

// Dequantizes each row of `tensor` and quantizes it to `type` into `dst`, rows split over the pool.
void requantize(const GgufTensorInfo& tensor, DType type, uint8_t* dst, ThreadPool* pool) {
    const int64_t row_length = tensor.dims[0];
    const int64_t num_rows = tensor.num_elements / row_length;
    const int64_t src_stride = row_bytes(tensor.type, row_length);
    const int64_t dst_stride = row_bytes(type, row_length);
    pool->parallel_for(num_rows, [&](int64_t begin, int64_t end, int) {
        std::vector<float> row(static_cast<size_t>(row_length));
        for (int64_t row_idx = begin; row_idx < end; ++row_idx) {
            dequantize_row(tensor.type, tensor.data + row_idx * src_stride, row.data(), row_length);
            quantize_row(type, row.data(), dst + row_idx * dst_stride, row_length);
        }
    });
}

Status check_tensor(const GgufFile& file, const GgufTensorInfo& tensor) {
    if (!can_dequantize(tensor.type)) {
        return invalid_argument(fmt::format("{}: tensor '{}' has type {}, which tern cannot dequantize", file.path(),
                                            tensor.name, dtype_name(tensor.type)));
    }
    if (tensor.dims.empty() || tensor.dims[0] <= 0) {
        return invalid_argument(fmt::format("{}: tensor '{}' has no rows", file.path(), tensor.name));
    }
    return Status::ok();
}

// Queues one tensor: copied as it is, requantized from the file, or quantized from AWQ-scaled floats.
void add_tensor(const GgufTensorInfo& tensor, std::optional<DType> chosen, const std::vector<float>* floats,
                int64_t idx, int64_t num_tensors, const QuantizeOptions& options, ThreadPool* pool,
                GgufWriter* writer) {
    const DType type = floats != nullptr && !chosen ? DType::kF32 : chosen.value_or(tensor.type);
    const bool recompute = chosen.has_value() && type != tensor.type;
    const GgufTensorInfo* source = &tensor;
    auto on_done = options.on_tensor_done;
    writer->add_tensor(tensor.name, type, tensor.dims, [=](uint8_t* dst) {
        if (floats != nullptr) {
            const int64_t row_length = source->dims[0];
            const int64_t stride = row_bytes(type, row_length);
            pool->parallel_for(source->num_elements / row_length, [&](int64_t begin, int64_t end, int) {
                for (int64_t row = begin; row < end; ++row) {
                    quantize_row(type, floats->data() + row * row_length, dst + row * stride, row_length);
                }
            });
        } else if (recompute) {
            requantize(*source, type, dst, pool);
        } else {
            std::memcpy(dst, source->data, static_cast<size_t>(source->num_bytes));
        }
        if (on_done) on_done(idx + 1, num_tensors, source->name);
    });
}

void count_tensor(const GgufTensorInfo& tensor, std::optional<DType> chosen, DType base, DType type,
                  QuantizeSummary* summary) {
    if (chosen && *chosen != base && tensor.dims[0] % dtype_traits(base).block_size != 0) ++summary->num_fallbacks;
    summary->tensor_bytes_before += tensor.num_bytes;
    summary->tensor_bytes_after += row_bytes(type, tensor.dims[0]) * (tensor.num_elements / tensor.dims[0]);
    ++summary->type_counts[std::string(dtype_name(type))];
    summary->num_requantized += chosen.has_value() && type != tensor.type ? 1 : 0;
}

}  // namespace

Result<QuantizeSummary> quantize_model(const std::string& input_path, const std::string& output_path,
                                       const QuantizeOptions& options, ThreadPool* pool) {
    std::error_code error;
    if (std::filesystem::equivalent(input_path, output_path, error)) {
        return invalid_argument(fmt::format("output {} is the input file; write to another path", output_path));
    }
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::open(input_path));
    const TensorRuleContext context = rule_context(*file);
    for (const GgufTensorInfo& tensor : file->tensors()) TERN_RETURN_IF_ERROR(check_tensor(*file, tensor));
    QuantizeSummary summary;
    FloatOverrides overrides;
    if (options.stats != nullptr) {
        TERN_ASSIGN_OR_RETURN(
            overrides, awq_scaled_weights(*file, *options.stats, options.preset, context, pool, &summary.calib_alphas));
    }
    GgufWriter writer;
    TERN_RETURN_IF_ERROR(copy_metadata(*file, options.preset, &writer));
    summary.bytes_before = static_cast<int64_t>(file->file_size());
    const int64_t num_tensors = static_cast<int64_t>(file->tensors().size());
    for (int64_t idx = 0; idx < num_tensors; ++idx) {
        const GgufTensorInfo& tensor = file->tensors()[static_cast<size_t>(idx)];
        std::optional<DType> chosen = choose_tensor_type(options.preset, tensor.name, tensor.dims, context);
        const auto found = overrides.find(tensor.name);
        const std::vector<float>* floats = found == overrides.end() ? nullptr : &found->second;
        if (floats != nullptr && !chosen && tensor.dims.size() >= 2) chosen = tensor.type;
        const DType type = floats != nullptr && !chosen ? DType::kF32 : chosen.value_or(tensor.type);
        count_tensor(tensor, chosen, preset_base_type(options.preset), type, &summary);
        add_tensor(tensor, chosen, floats, idx, num_tensors, options, pool, &writer);
    }
    TERN_RETURN_IF_ERROR(writer.write(output_path));
    summary.bytes_after = static_cast<int64_t>(std::filesystem::file_size(output_path, error));
    return summary;
}

}  // namespace tern
