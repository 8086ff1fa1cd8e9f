// GGUF parsing. Layout (all little-endian):
//   magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count | kv[kv_count] | tensor_info[tensor_count]
//   | padding to alignment | data section (tensor offsets are relative to its start, each aligned)
// Strings are u64 length + bytes (no terminator). Every read goes through Cursor, which refuses to step past
// the end, so a truncated or hostile file can only produce an error, never an out-of-bounds read.
#include <fmt/format.h>

#include "base/printable.h"

#include <cstring>
#include <limits>

#include "formats/gguf.h"

namespace tern {
namespace {

constexpr uint32_t kMaxDims = 4;          // ggml's GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 8;        // deeper nesting is only ever seen in hostile files

class Cursor {
public:
    Cursor(const uint8_t* bytes, uint64_t size, const std::string& label) : bytes_(bytes), size_(size), label_(label) {}

    uint64_t offset() const { return offset_; }
    uint64_t remaining() const { return size_ - offset_; }

    Status error(const std::string& what) const {
        return invalid_argument(fmt::format("{}: invalid GGUF at offset {}: {}", label_, offset_, what));
    }

    template <typename T>
    Status read(T* out, const char* what) {
        if (remaining() < sizeof(T)) {
            return error(fmt::format("file ends while reading {} ({} bytes needed, {} left); the file is truncated",
                                     what, sizeof(T), remaining()));
        }
        std::memcpy(out, bytes_ + offset_, sizeof(T));
        offset_ += sizeof(T);
        return Status::ok();
    }

    Status read_string(std::string* out, const char* what) {
        uint64_t length = 0;
        TERN_RETURN_IF_ERROR(read(&length, what));
        if (length > remaining()) {
            offset_ -= sizeof(length);
            return error(fmt::format("{} has length {} but only {} bytes remain", what, length, remaining() - 8));
        }
        out->assign(reinterpret_cast<const char*>(bytes_ + offset_), length);
        offset_ += length;
        return Status::ok();
    }

private:
    const uint8_t* bytes_;
    uint64_t size_;
    uint64_t offset_ = 0;
    const std::string& label_;
};

// Smallest encoded size of one value of `type`, to bound array counts by the bytes left.
uint64_t min_encoded_size(GgufType type) {
    switch (type) {
        case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
        case GgufType::kU16: case GgufType::kI16: return 2;
        case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
        case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: case GgufType::kString: return 8;
        case GgufType::kArray: return 12;
    }
    return 1;
}

bool is_known_value_type(uint32_t raw) { return raw <= static_cast<uint32_t>(GgufType::kF64); }

}  // namespace

// Parses one file; a friend of GgufFile so it can fill the private fields.
class GgufParser {
public:
    GgufParser(GgufFile* file) : file_(file), cursor_(file->bytes_, file->size_, file->label_) {}

    Status parse() {
        TERN_RETURN_IF_ERROR(parse_header());
        for (uint64_t kv_idx = 0; kv_idx < num_metadata_; ++kv_idx) TERN_RETURN_IF_ERROR(parse_metadata_entry());
        TERN_RETURN_IF_ERROR(read_alignment());
        for (uint64_t tensor_idx = 0; tensor_idx < num_tensors_; ++tensor_idx) {
            TERN_RETURN_IF_ERROR(parse_tensor_info());
        }
        return bind_tensor_data();
    }

private:
    Status parse_header() {
        uint32_t magic = 0;
        TERN_RETURN_IF_ERROR(cursor_.read(&magic, "the magic number"));
        if (std::memcmp(&magic, "GGUF", 4) != 0) return invalid_argument(file_->label_ + ": not a GGUF file (bad magic)");
        TERN_RETURN_IF_ERROR(cursor_.read(&file_->version_, "the version"));
        if (file_->version_ != 2 && file_->version_ != 3) {
            return cursor_.error(fmt::format("unsupported GGUF version {} (tern reads versions 2 and 3)", file_->version_));
        }
        TERN_RETURN_IF_ERROR(cursor_.read(&num_tensors_, "the tensor count"));
        TERN_RETURN_IF_ERROR(cursor_.read(&num_metadata_, "the metadata count"));
        // Each tensor info takes at least 24 bytes and each metadata entry at least 12.
        if (num_tensors_ > cursor_.remaining() / 24) {
            return cursor_.error(fmt::format("tensor count {} cannot fit in the file", num_tensors_));
        }
        if (num_metadata_ > cursor_.remaining() / 12) {
            return cursor_.error(fmt::format("metadata count {} cannot fit in the file", num_metadata_));
        }
        return Status::ok();
    }

    Status parse_metadata_entry() {
        std::string key;
        TERN_RETURN_IF_ERROR(cursor_.read_string(&key, "a metadata key"));
        if (file_->metadata_index_.count(key) != 0) {
            return cursor_.error(fmt::format("duplicate metadata key '{}'", printable(key)));
        }
        uint32_t raw_type = 0;
        TERN_RETURN_IF_ERROR(cursor_.read(&raw_type, "a metadata value type"));
        if (!is_known_value_type(raw_type)) {
            return cursor_.error(fmt::format("metadata key '{}' has unknown value type {}", printable(key), raw_type));
        }
        GgufValue value;
        TERN_RETURN_IF_ERROR(parse_value(static_cast<GgufType>(raw_type), &value, 0, key));
        file_->metadata_index_.emplace(key, file_->metadata_.size());
        file_->metadata_.emplace_back(std::move(key), std::move(value));
        return Status::ok();
    }

    template <typename T>
    Status read_int(GgufValue* value, const std::string& key) {
        T raw{};
        TERN_RETURN_IF_ERROR(cursor_.read(&raw, key.c_str()));
        value->int_value = static_cast<int64_t>(raw);
        return Status::ok();
    }

    Status parse_value(GgufType type, GgufValue* value, int depth, const std::string& key) {
        value->type = type;
        switch (type) {
            case GgufType::kU8: return read_int<uint8_t>(value, key);
            case GgufType::kI8: return read_int<int8_t>(value, key);
            case GgufType::kU16: return read_int<uint16_t>(value, key);
            case GgufType::kI16: return read_int<int16_t>(value, key);
            case GgufType::kU32: return read_int<uint32_t>(value, key);
            case GgufType::kI32: return read_int<int32_t>(value, key);
            case GgufType::kU64: return read_int<uint64_t>(value, key);
            case GgufType::kI64: return read_int<int64_t>(value, key);
            case GgufType::kBool: {
                uint8_t raw = 0;
                TERN_RETURN_IF_ERROR(cursor_.read(&raw, key.c_str()));
                if (raw > 1) {
                    return cursor_.error(
                        fmt::format("metadata '{}': bool value {} is not 0 or 1", printable(key), raw));
                }
                value->int_value = raw;
                return Status::ok();
            }
            case GgufType::kF32: {
                float raw = 0;
                TERN_RETURN_IF_ERROR(cursor_.read(&raw, key.c_str()));
                value->float_value = raw;
                return Status::ok();
            }
            case GgufType::kF64: return cursor_.read(&value->float_value, key.c_str());
            case GgufType::kString: return cursor_.read_string(&value->string_value, key.c_str());
            case GgufType::kArray: return parse_array(value, depth, key);
        }
        return cursor_.error(fmt::format("metadata '{}': unknown value type", printable(key)));
    }

    Status parse_array(GgufValue* value, int depth, const std::string& key) {
        if (depth >= kMaxArrayNesting) {
            return cursor_.error(
                fmt::format("metadata '{}': arrays nested deeper than {}", printable(key), kMaxArrayNesting));
        }
        uint32_t raw_type = 0;
        TERN_RETURN_IF_ERROR(cursor_.read(&raw_type, "an array element type"));
        if (!is_known_value_type(raw_type)) {
            return cursor_.error(
                fmt::format("metadata '{}': array of unknown element type {}", printable(key), raw_type));
        }
        value->array_type = static_cast<GgufType>(raw_type);
        uint64_t count = 0;
        TERN_RETURN_IF_ERROR(cursor_.read(&count, "an array length"));
        if (count > cursor_.remaining() / min_encoded_size(value->array_type)) {
            return cursor_.error(fmt::format("metadata '{}': array length {} cannot fit in the {} bytes left",
                                             printable(key), count, cursor_.remaining()));
        }
        value->array.resize(count);
        for (GgufValue& item : value->array) {
            TERN_RETURN_IF_ERROR(parse_value(value->array_type, &item, depth + 1, key));
        }
        return Status::ok();
    }

    Status read_alignment() {
        const GgufValue* alignment = file_->find("general.alignment");
        if (alignment == nullptr) return Status::ok();
        if (alignment->type != GgufType::kU32) {
            return invalid_argument(fmt::format("{}: general.alignment must be a u32, found {}", file_->label_,
                                                gguf_type_name(alignment->type)));
        }
        const int64_t value = alignment->int_value;
        if (value == 0 || (value & (value - 1)) != 0) {
            return invalid_argument(
                fmt::format("{}: general.alignment is {}; it must be a power of two", file_->label_, value));
        }
        file_->alignment_ = static_cast<uint32_t>(value);
        return Status::ok();
    }

    Status parse_tensor_info();
    Status bind_tensor_data();

    GgufFile* file_;
    Cursor cursor_;
    uint64_t num_tensors_ = 0;
    uint64_t num_metadata_ = 0;
};

Status GgufParser::parse_tensor_info() {
    GgufTensorInfo info;
    TERN_RETURN_IF_ERROR(cursor_.read_string(&info.name, "a tensor name"));
    if (file_->tensor_index_.count(info.name) != 0) {
        return cursor_.error(fmt::format("duplicate tensor name '{}'", printable(info.name)));
    }
    uint32_t num_dims = 0;
    TERN_RETURN_IF_ERROR(cursor_.read(&num_dims, "a tensor dimension count"));
    if (num_dims == 0 || num_dims > kMaxDims) {
        return cursor_.error(
            fmt::format("tensor '{}' has {} dimensions (1 to {} allowed)", printable(info.name), num_dims, kMaxDims));
    }
    int64_t num_elements = 1;
    for (uint32_t dim_idx = 0; dim_idx < num_dims; ++dim_idx) {
        uint64_t dim = 0;
        TERN_RETURN_IF_ERROR(cursor_.read(&dim, "a tensor dimension"));
        if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
            (dim != 0 && num_elements > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(dim))) {
            return cursor_.error(
                fmt::format("tensor '{}': the product of its dimensions overflows", printable(info.name)));
        }
        info.dims.push_back(static_cast<int64_t>(dim));
        num_elements *= static_cast<int64_t>(dim);
    }
    uint32_t raw_type = 0;
    TERN_RETURN_IF_ERROR(cursor_.read(&raw_type, "a tensor type"));
    const std::optional<DTypeTraits> traits = dtype_traits_of(raw_type);
    if (!traits) {
        return cursor_.error(fmt::format("tensor '{}' has unknown type id {}", printable(info.name), raw_type));
    }
    if (info.dims[0] % traits->block_size != 0) {
        return cursor_.error(fmt::format("tensor '{}': row length {} is not a multiple of the {} block size {}",
                                         printable(info.name), info.dims[0], traits->name, traits->block_size));
    }
    TERN_RETURN_IF_ERROR(cursor_.read(&info.offset, "a tensor data offset"));
    info.type = traits->type;
    info.num_elements = num_elements;
    // num_elements / block_size * block_bytes cannot overflow: block_bytes <= 292 and elements < 2^63 / 256 checked.
    if (num_elements / traits->block_size > std::numeric_limits<int64_t>::max() / traits->block_bytes) {
        return cursor_.error(fmt::format("tensor '{}': its byte size overflows", printable(info.name)));
    }
    info.num_bytes = num_elements / traits->block_size * traits->block_bytes;
    file_->tensor_index_.emplace(info.name, file_->tensors_.size());
    file_->tensors_.push_back(std::move(info));
    return Status::ok();
}

Status GgufParser::bind_tensor_data() {
    const uint64_t alignment = file_->alignment_;
    const uint64_t data_offset = (cursor_.offset() + alignment - 1) / alignment * alignment;
    file_->data_offset_ = data_offset;
    if (file_->tensors_.empty()) return Status::ok();
    if (data_offset > file_->size_) {
        return invalid_argument(fmt::format("{}: the data section starts at offset {} beyond the end of the file ({} "
                                            "bytes); the file is truncated", file_->label_, data_offset, file_->size_));
    }
    const uint64_t data_size = file_->size_ - data_offset;
    for (GgufTensorInfo& info : file_->tensors_) {
        if (info.offset % alignment != 0) {
            return invalid_argument(fmt::format("{}: tensor '{}' data offset {} is not aligned to {}", file_->label_,
                                                printable(info.name), info.offset, alignment));
        }
        const uint64_t num_bytes = static_cast<uint64_t>(info.num_bytes);
        if (info.offset > data_size || num_bytes > data_size - info.offset) {
            return invalid_argument(fmt::format(
                "{}: tensor '{}' data [{}, {}) lies outside the data section ({} bytes from offset {}); the file is "
                "truncated or corrupt", file_->label_, printable(info.name), data_offset + info.offset,
                data_offset + info.offset + num_bytes, data_size, data_offset));
        }
        info.data = file_->bytes_ + data_offset + info.offset;
    }
    return Status::ok();
}

Result<std::unique_ptr<GgufFile>> GgufFile::parse(const uint8_t* bytes, size_t size, std::string label) {
    std::unique_ptr<GgufFile> file(new GgufFile());
    file->label_ = std::move(label);
    file->bytes_ = bytes;
    file->size_ = size;
    GgufParser parser(file.get());
    TERN_RETURN_IF_ERROR(parser.parse());
    return file;
}

void GgufFile::release_mapping() {
    for (GgufTensorInfo& tensor : tensors_) tensor.data = nullptr;
    bytes_ = nullptr;
    mapping_.reset();
}

void GgufFile::release_pages(const uint8_t* begin, int64_t bytes) const {
    if (mapping_ != nullptr && bytes > 0) mapping_->release_pages(begin, static_cast<size_t>(bytes));
}

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path) {
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapping, MappedFile::open(path));
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, parse(mapping->data(), mapping->size(), path));
    file->mapping_ = std::move(mapping);
    return file;
}

}  // namespace tern
