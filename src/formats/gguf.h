// GGUF v2/v3 reading: a memory-mapped file, every metadata value type, tensor infos with zero-copy data.
// Every read is bounds-checked: a malformed file yields one error line naming the file, the offset or
// tensor, and what is wrong. Writing lives in gguf_writer.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/dtype.h"

namespace tern {

// ggml's `enum gguf_type`.
enum class GgufType : uint32_t {
    kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
    kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

std::string_view gguf_type_name(GgufType type);

// One metadata value. Integers are widened into `int_value` (as signed; u64 values above 2^63 keep their bits),
// floats into `float_value`; arrays hold their element type and items.
struct GgufValue {
    GgufType type = GgufType::kU8;
    int64_t int_value = 0;
    double float_value = 0.0;
    std::string string_value;
    GgufType array_type = GgufType::kU8;
    std::vector<GgufValue> array;

    bool is_integer() const;
    bool is_float() const { return type == GgufType::kF32 || type == GgufType::kF64; }
};

struct GgufTensorInfo {
    std::string name;
    std::vector<int64_t> dims;  // dims[0] is the row length (fastest varying), as ggml's ne[]
    DType type = DType::kF32;
    uint64_t offset = 0;        // relative to the start of the data section
    int64_t num_elements = 0;
    int64_t num_bytes = 0;
    const uint8_t* data = nullptr;  // points into the mapping (or buffer) owned by the GgufFile
};

class GgufFile {
public:
    // Maps `path` and parses it; the returned object owns the mapping.
    static Result<std::unique_ptr<GgufFile>> open(const std::string& path);
    // Parses bytes held by the caller, who keeps them alive as long as the GgufFile; `label` names it in errors.
    static Result<std::unique_ptr<GgufFile>> parse(const uint8_t* bytes, size_t size, std::string label);

    const std::string& path() const { return label_; }
    uint32_t version() const { return version_; }
    uint32_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }
    uint64_t file_size() const { return size_; }

    // Metadata in file order.
    const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
    const GgufValue* find(std::string_view key) const;
    std::optional<int64_t> get_int(std::string_view key) const;      // any integer type
    std::optional<double> get_float(std::string_view key) const;     // any float or integer type
    std::optional<bool> get_bool(std::string_view key) const;
    std::optional<std::string> get_string(std::string_view key) const;
    // An array whose elements have `element_type`, or nullptr.
    const std::vector<GgufValue>* get_array(std::string_view key, GgufType element_type) const;

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* find_tensor(std::string_view name) const;

    // Unmaps the file once its owner has copied what it reads (Model::load): every tensor's `data` becomes null,
    // the metadata stays. From then on the file on disk may be truncated or rewritten without harm; while it is
    // mapped, a read of a page the file no longer has dies with SIGBUS.
    void release_mapping();
    // Drops a range of the mapped file's pages from resident memory once its bytes are copied (a file parsed from
    // a caller's buffer keeps them: dropping an anonymous page would zero it). Model::load calls it tensor by tensor
    // so that the mapping and the weights' own copy are not both resident at the end of the load.
    void release_pages(const uint8_t* begin, int64_t bytes) const;

private:
    friend class GgufParser;
    GgufFile() = default;

    std::string label_;
    std::unique_ptr<MappedFile> mapping_;
    const uint8_t* bytes_ = nullptr;
    uint64_t size_ = 0;
    uint32_t version_ = 0;
    uint32_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<std::pair<std::string, GgufValue>> metadata_;
    std::map<std::string, size_t, std::less<>> metadata_index_;
    std::vector<GgufTensorInfo> tensors_;
    std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace tern
