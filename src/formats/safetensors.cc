// Safetensors parsing. Layout:
//   u64 header_length (little-endian) | header: header_length bytes of JSON | data section (the rest of the file)
// The header is an object: {"__metadata__": {string: string}, NAME: {"dtype": "F32", "shape": [d0, d1, ...],
// "data_offsets": [begin, end]}, ...}; offsets are relative to the data section and the shape is row-major.
#include "formats/safetensors.h"

#include <fmt/format.h>

#include "base/printable.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "formats/strict_json.h"

namespace tern {
namespace {

constexpr uint64_t kLengthBytes = 8;

struct DTypeEntry {
    std::string_view name;
    std::optional<DType> type;  // nullopt: a real safetensors dtype that tern does not read
    int64_t element_bytes;
};

constexpr DTypeEntry kDTypes[] = {
    {"F32", DType::kF32, 4},   {"F16", DType::kF16, 2},   {"BF16", DType::kBF16, 2}, {"F64", std::nullopt, 8},
    {"I64", std::nullopt, 8},  {"U64", std::nullopt, 8},  {"I32", std::nullopt, 4},  {"U32", std::nullopt, 4},
    {"I16", std::nullopt, 2},  {"U16", std::nullopt, 2},  {"I8", std::nullopt, 1},   {"U8", std::nullopt, 1},
    {"BOOL", std::nullopt, 1}, {"F8_E4M3", std::nullopt, 1}, {"F8_E5M2", std::nullopt, 1},
};

std::string format_shape(const std::vector<int64_t>& shape) {
    std::string text;
    for (int64_t dim : shape) text += (text.empty() ? "" : ", ") + std::to_string(dim);
    return "[" + text + "]";
}

std::string json_kind(const nlohmann::json& value) {
    if (value.is_number_float()) return "a float";
    if (value.is_number_integer()) return "an integer";
    return std::string(value.type_name());
}

}  // namespace

// Validates one file's header and binds its tensors; a friend of SafetensorsFile.
class SafetensorsParser {
public:
    SafetensorsParser(SafetensorsFile* file, const uint8_t* bytes, uint64_t size)
        : file_(file), bytes_(bytes), size_(size) {}

    Status parse() {
        uint64_t header_length = 0;
        TERN_RETURN_IF_ERROR(read_header_length(&header_length));
        const char* header_text = reinterpret_cast<const char*>(bytes_ + kLengthBytes);
        TERN_ASSIGN_OR_RETURN(nlohmann::json header,
                              parse_strict_json(std::string_view(header_text, header_length),
                                                file_->label_ + " (safetensors header)"));
        if (!header.is_object()) {
            return error(fmt::format("the header must be a JSON object, found {}", json_kind(header)));
        }
        data_offset_ = kLengthBytes + header_length;
        for (const auto& [name, entry] : header.items()) {
            if (name == "__metadata__") {
                TERN_RETURN_IF_ERROR(parse_metadata(entry));
                continue;
            }
            SafetensorsTensor tensor;
            tensor.name = name;
            TERN_RETURN_IF_ERROR(parse_tensor(entry, &tensor));
            file_->tensors_.push_back(std::move(tensor));
        }
        TERN_RETURN_IF_ERROR(check_overlaps());
        std::sort(file_->tensors_.begin(), file_->tensors_.end(),
                  [](const auto& a, const auto& b) { return a.name < b.name; });
        return Status::ok();
    }

private:
    Status error(const std::string& what) const {
        return invalid_argument(fmt::format("{}: invalid safetensors file: {}", file_->label_, what));
    }

    Status read_header_length(uint64_t* out) const {
        if (size_ < kLengthBytes) {
            return error(fmt::format("the file is {} bytes, too short for the 8-byte header length; it is truncated",
                                     size_));
        }
        uint8_t raw[kLengthBytes];
        std::memcpy(raw, bytes_, kLengthBytes);
        uint64_t length = 0;
        for (int byte_idx = 7; byte_idx >= 0; --byte_idx) length = length << 8 | raw[byte_idx];
        if (length > SafetensorsFile::kMaxHeaderBytes) {
            return error(fmt::format("header length {} exceeds the {}-byte limit", length,
                                     SafetensorsFile::kMaxHeaderBytes));
        }
        if (length > size_ - kLengthBytes) {
            return error(fmt::format("header length {} runs past the end of the file ({} bytes); it is truncated",
                                     length, size_));
        }
        *out = length;
        return Status::ok();
    }

    Status parse_metadata(const nlohmann::json& entry) {
        if (!entry.is_object()) return error(fmt::format("__metadata__ must be an object, found {}", json_kind(entry)));
        for (const auto& [key, value] : entry.items()) {
            if (!value.is_string()) {
                return error(fmt::format("__metadata__ value of '{}' must be a string, found {}", printable(key),
                                         json_kind(value)));
            }
            file_->metadata_.emplace(key, value.get<std::string>());
        }
        return Status::ok();
    }

    Status parse_tensor(const nlohmann::json& entry, SafetensorsTensor* tensor) const {
        const std::string& name = tensor->name;
        if (name.empty()) return error("a tensor has an empty name");
        if (!entry.is_object()) {
            return error(
                fmt::format("tensor '{}': its entry must be an object, found {}", printable(name), json_kind(entry)));
        }
        int64_t element_bytes = 0;
        TERN_RETURN_IF_ERROR(parse_dtype(entry, tensor, &element_bytes));
        TERN_RETURN_IF_ERROR(parse_shape(entry, tensor));
        if (tensor->num_elements > std::numeric_limits<int64_t>::max() / element_bytes) {
            return error(fmt::format("tensor '{}': the byte size of shape {} overflows", printable(name),
                                     format_shape(tensor->shape)));
        }
        const uint64_t expected_bytes = static_cast<uint64_t>(tensor->num_elements * element_bytes);
        TERN_RETURN_IF_ERROR(parse_offsets(entry, tensor));
        if (tensor->end - tensor->begin != expected_bytes) {
            return error(
                fmt::format("tensor '{}': data_offsets [{}, {}) hold {} bytes, but dtype {} and shape {} need {}",
                            printable(name), tensor->begin, tensor->end, tensor->end - tensor->begin,
                            printable(entry["dtype"].get<std::string>()), format_shape(tensor->shape), expected_bytes));
        }
        tensor->data = bytes_ + data_offset_ + tensor->begin;
        return Status::ok();
    }

    Status parse_dtype(const nlohmann::json& entry, SafetensorsTensor* tensor, int64_t* element_bytes) const {
        const auto found = entry.find("dtype");
        if (found == entry.end() || !found->is_string()) {
            return error(fmt::format("tensor '{}' has no string 'dtype'", printable(tensor->name)));
        }
        const std::string dtype = found->get<std::string>();
        for (const DTypeEntry& known : kDTypes) {
            if (known.name != dtype) continue;
            if (!known.type) {
                return error(fmt::format("tensor '{}' has dtype {}, which tern does not read (F32, F16 and BF16 only)",
                                         printable(tensor->name), printable(dtype)));
            }
            tensor->type = *known.type;
            *element_bytes = known.element_bytes;
            return Status::ok();
        }
        return error(fmt::format("tensor '{}' has unknown dtype '{}'", printable(tensor->name), dtype));
    }

    Status parse_shape(const nlohmann::json& entry, SafetensorsTensor* tensor) const {
        const auto found = entry.find("shape");
        if (found == entry.end() || !found->is_array()) {
            return error(fmt::format("tensor '{}' has no 'shape' array", printable(tensor->name)));
        }
        int64_t num_elements = 1;
        for (const nlohmann::json& dim_json : *found) {
            if (!dim_json.is_number_unsigned()) {
                const bool negative = dim_json.is_number_integer();
                return error(fmt::format("tensor '{}': shape dimension {} is {}", printable(tensor->name),
                                         dim_json.dump(), negative ? "negative" : "not a non-negative integer"));
            }
            const uint64_t dim = dim_json.get<uint64_t>();
            if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
                (dim != 0 && num_elements > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(dim))) {
                return error(
                    fmt::format("tensor '{}': the element count of its shape overflows", printable(tensor->name)));
            }
            tensor->shape.push_back(static_cast<int64_t>(dim));
            num_elements *= static_cast<int64_t>(dim);
        }
        tensor->num_elements = num_elements;
        return Status::ok();
    }

    Status parse_offsets(const nlohmann::json& entry, SafetensorsTensor* tensor) const {
        const auto found = entry.find("data_offsets");
        if (found == entry.end() || !found->is_array() || found->size() != 2 || !(*found)[0].is_number_unsigned() ||
            !(*found)[1].is_number_unsigned()) {
            return error(fmt::format("tensor '{}': 'data_offsets' must be two non-negative integers [begin, end]",
                                     printable(tensor->name)));
        }
        tensor->begin = (*found)[0].get<uint64_t>();
        tensor->end = (*found)[1].get<uint64_t>();
        const uint64_t data_size = size_ - data_offset_;
        if (tensor->begin > tensor->end) {
            return error(fmt::format("tensor '{}': data_offsets [{}, {}) end before they begin",
                                     printable(tensor->name), tensor->begin, tensor->end));
        }
        if (tensor->end > data_size) {
            return error(
                fmt::format("tensor '{}': data_offsets [{}, {}) lie outside the {}-byte data section; the file "
                            "is truncated or corrupt",
                            printable(tensor->name), tensor->begin, tensor->end, data_size));
        }
        return Status::ok();
    }

    // Two tensors sharing bytes would alias each other: only a corrupt or hostile writer produces that.
    Status check_overlaps() const {
        std::vector<const SafetensorsTensor*> by_offset;
        for (const SafetensorsTensor& tensor : file_->tensors_) {
            if (tensor.end > tensor.begin) by_offset.push_back(&tensor);
        }
        std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) {
            return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
        });
        const SafetensorsTensor* furthest = nullptr;
        for (const SafetensorsTensor* tensor : by_offset) {
            if (furthest != nullptr && tensor->begin < furthest->end) {
                return error(fmt::format("tensors '{}' [{}, {}) and '{}' [{}, {}) overlap", printable(furthest->name),
                                         furthest->begin, furthest->end, printable(tensor->name), tensor->begin,
                                         tensor->end));
            }
            if (furthest == nullptr || tensor->end > furthest->end) furthest = tensor;
        }
        return Status::ok();
    }

    SafetensorsFile* file_;
    const uint8_t* bytes_;
    uint64_t size_;
    uint64_t data_offset_ = 0;
};

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::parse(const uint8_t* bytes, size_t size, std::string label) {
    std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
    file->label_ = std::move(label);
    SafetensorsParser parser(file.get(), bytes, size);
    TERN_RETURN_IF_ERROR(parser.parse());
    return file;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapping, MappedFile::open(path));
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file, parse(mapping->data(), mapping->size(), path));
    file->mapping_ = std::move(mapping);
    return file;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
    auto found = std::lower_bound(
        tensors_.begin(), tensors_.end(), name,
        [](const SafetensorsTensor& tensor, std::string_view key) { return tensor.name < key; });
    return found != tensors_.end() && found->name == name ? &*found : nullptr;
}

}  // namespace tern
