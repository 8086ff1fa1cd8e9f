// Safetensors reading: one memory-mapped file, or a checkpoint sharded over several files by
// model.safetensors.index.json. The header is validated before any tensor is handed out: every dtype, shape and
// data range is checked, so a truncated or hostile file yields one error line naming the file and the problem,
// never an out-of-bounds read. Only F32, F16 and BF16 tensors are read (what Hugging Face checkpoints hold).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/dtype.h"

namespace tern {

struct SafetensorsTensor {
    std::string name;
    DType type = DType::kF32;      // kF32, kF16 or kBF16
    std::vector<int64_t> shape;    // as stored, row-major: shape.back() varies fastest; [] is a scalar
    int64_t num_elements = 0;
    uint64_t begin = 0;            // [begin, end) relative to the start of the data section
    uint64_t end = 0;
    const uint8_t* data = nullptr; // points into the bytes owned by the SafetensorsFile

    int64_t num_bytes() const { return static_cast<int64_t>(end - begin); }
};

class SafetensorsFile {
public:
    // Headers larger than this are refused (the reference implementation's limit), so a hostile length cannot make
    // tern parse gigabytes of JSON.
    static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

    // Maps `path` and validates it; the returned object owns the mapping.
    static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);
    // Validates bytes held by the caller, who keeps them alive as long as the file; `label` names it in errors.
    static Result<std::unique_ptr<SafetensorsFile>> parse(const uint8_t* bytes, size_t size, std::string label);

    const std::string& path() const { return label_; }
    // Tensors sorted by name.
    const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
    const SafetensorsTensor* find(std::string_view name) const;
    // The optional "__metadata__" string map.
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

private:
    friend class SafetensorsParser;
    SafetensorsFile() = default;

    std::string label_;
    std::unique_ptr<MappedFile> mapping_;
    std::vector<SafetensorsTensor> tensors_;
    std::map<std::string, std::string> metadata_;
};

// The tensor -> shard file map of a parsed model.safetensors.index.json; an error naming `index_path` when it has
// none, or names a shard outside the index's folder.
Result<std::map<std::string, std::string>> safetensors_weight_map(const nlohmann::json& index,
                                                                  const std::string& index_path);

// All tensors of a checkpoint, whether in one model.safetensors or in shards listed by an index.
class SafetensorsCheckpoint {
public:
    struct Entry {
        const SafetensorsTensor* tensor;
        const SafetensorsFile* file;
    };

    // Opens DIR/model.safetensors.index.json and every shard it names when the index exists, else
    // DIR/model.safetensors. A shard that is missing or invalid, or a tensor the index lists but its shard lacks,
    // is an error naming both.
    static Result<std::unique_ptr<SafetensorsCheckpoint>> open_dir(const std::string& dir);
    static Result<std::unique_ptr<SafetensorsCheckpoint>> open_index(const std::string& index_path);
    static Result<std::unique_ptr<SafetensorsCheckpoint>> open_file(const std::string& path);

    const Entry* find(std::string_view name) const;
    // Every tensor, by name.
    const std::map<std::string, Entry, std::less<>>& entries() const { return entries_; }
    // What was opened: the single file or the index, for messages.
    const std::string& source() const { return source_; }

private:
    SafetensorsCheckpoint() = default;

    std::string source_;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace tern
