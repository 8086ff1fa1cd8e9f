// GgufFile's typed metadata accessors.
#include "formats/gguf.h"

namespace tern {

std::string_view gguf_type_name(GgufType type) {
    switch (type) {
        case GgufType::kU8: return "u8";
        case GgufType::kI8: return "i8";
        case GgufType::kU16: return "u16";
        case GgufType::kI16: return "i16";
        case GgufType::kU32: return "u32";
        case GgufType::kI32: return "i32";
        case GgufType::kF32: return "f32";
        case GgufType::kBool: return "bool";
        case GgufType::kString: return "string";
        case GgufType::kArray: return "array";
        case GgufType::kU64: return "u64";
        case GgufType::kI64: return "i64";
        case GgufType::kF64: return "f64";
    }
    return "unknown";
}

bool GgufValue::is_integer() const {
    switch (type) {
        case GgufType::kU8: case GgufType::kI8: case GgufType::kU16: case GgufType::kI16:
        case GgufType::kU32: case GgufType::kI32: case GgufType::kU64: case GgufType::kI64:
            return true;
        default:
            return false;
    }
}

const GgufValue* GgufFile::find(std::string_view key) const {
    auto found = metadata_index_.find(key);
    return found == metadata_index_.end() ? nullptr : &metadata_[found->second].second;
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
    const GgufValue* value = find(key);
    if (value == nullptr || !value->is_integer()) return std::nullopt;
    return value->int_value;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
    const GgufValue* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (value->is_float()) return value->float_value;
    if (value->is_integer()) return static_cast<double>(value->int_value);
    return std::nullopt;
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
    const GgufValue* value = find(key);
    if (value == nullptr || value->type != GgufType::kBool) return std::nullopt;
    return value->int_value != 0;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
    const GgufValue* value = find(key);
    if (value == nullptr || value->type != GgufType::kString) return std::nullopt;
    return value->string_value;
}

const std::vector<GgufValue>* GgufFile::get_array(std::string_view key, GgufType element_type) const {
    const GgufValue* value = find(key);
    if (value == nullptr || value->type != GgufType::kArray || value->array_type != element_type) return nullptr;
    return &value->array;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
    auto found = tensor_index_.find(name);
    return found == tensor_index_.end() ? nullptr : &tensors_[found->second];
}

}  // namespace tern
