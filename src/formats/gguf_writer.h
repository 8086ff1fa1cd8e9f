// GGUF v3 writing: metadata of every value type and tensors whose data is produced one at a time, so a
// multi-gigabyte file is written without holding it in memory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "formats/gguf.h"

namespace tern {

// `general.file_type` as llama.cpp reads it (its llama_ftype, not the ggml type id) for a file whose matrices are
// mostly `weight_type`: Q4_K is "Q4_K - Small", Q5_K "Q5_K - Small" (the all-K-quant mixtures closest to one type),
// a type with no llama_ftype 0 ("all F32"). Written as the ggml id, a Q4_K file read as "Q3_K - Medium".
uint32_t llama_file_type(DType weight_type);

class GgufWriter {
public:
    // Fills `dst` (exactly the tensor's byte size) with the tensor's data.
    using FillFn = std::function<void(uint8_t* dst)>;

    void set_alignment(uint32_t alignment);
    void add(std::string key, GgufValue value);
    void add_string(std::string key, std::string value);
    void add_u32(std::string key, uint32_t value);
    void add_i32(std::string key, int32_t value);
    void add_f32(std::string key, float value);
    void add_bool(std::string key, bool value);
    void add_string_array(std::string key, const std::vector<std::string>& values);
    void add_f32_array(std::string key, const std::vector<float>& values);
    void add_i32_array(std::string key, const std::vector<int32_t>& values);

    // `dims[0]` is the row length. The data is produced by `fill` when write() reaches this tensor.
    void add_tensor(std::string name, DType type, std::vector<int64_t> dims, FillFn fill);
    void add_tensor_bytes(std::string name, DType type, std::vector<int64_t> dims, std::vector<uint8_t> bytes);

    // Writes a file beside `path` and renames it over `path` once complete: a process that has the old file mapped
    // (a server, a test running beside) keeps reading it, where truncating it in place would kill that process with
    // SIGBUS, and a failed write leaves no half file.
    Status write(const std::string& path) const;
    // The whole file in memory (for tests and small files).
    std::vector<uint8_t> to_bytes() const;

private:
    Status write_file(const std::string& path) const;

    struct PendingTensor {
        std::string name;
        DType type;
        std::vector<int64_t> dims;
        int64_t num_bytes;
        FillFn fill;
    };
    void emit_header(const std::function<void(const void*, size_t)>& emit) const;
    void emit_value(const GgufValue& value, const std::function<void(const void*, size_t)>& emit) const;

    uint32_t alignment_ = 32;
    std::vector<std::pair<std::string, GgufValue>> metadata_;
    std::vector<PendingTensor> tensors_;
};

}  // namespace tern
