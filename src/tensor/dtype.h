// Tensor element types with ggml's numeric ids and block geometry, so GGUF files interoperate with
// llama.cpp and Ollama. This module only describes types; quant/ converts between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tern {

// Values are ggml's `enum ggml_type`; they are written to and read from GGUF files as-is.
enum class DType : uint32_t {
    kF32 = 0,
    kF16 = 1,
    kQ4_0 = 2,
    kQ4_1 = 3,
    kQ5_0 = 6,
    kQ5_1 = 7,
    kQ8_0 = 8,
    kQ8_1 = 9,
    kQ2_K = 10,
    kQ3_K = 11,
    kQ4_K = 12,
    kQ5_K = 13,
    kQ6_K = 14,
    kQ8_K = 15,
    kI8 = 24,
    kI16 = 25,
    kI32 = 26,
    kI64 = 27,
    kF64 = 28,
    kBF16 = 30,
};

struct DTypeTraits {
    DType type;
    std::string_view name;    // as llama.cpp prints it: "f32", "q4_0", "q4_K", ...
    int64_t block_size;       // elements per block (1 for plain types)
    int64_t block_bytes;      // bytes per block
    bool can_dequantize;      // tern has a reference dequantizer for it
};

// Traits of a ggml type id, or nullopt when tern does not know the id.
std::optional<DTypeTraits> dtype_traits_of(uint32_t ggml_type_id);
const DTypeTraits& dtype_traits(DType type);

inline std::string_view dtype_name(DType type) { return dtype_traits(type).name; }
// Parses a name such as "q8_0", "Q4_K", "f16" (case-insensitive); nullopt when unknown.
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes of one row of `num_elements`; num_elements must be a multiple of the block size.
inline int64_t row_bytes(DType type, int64_t num_elements) {
    const DTypeTraits& traits = dtype_traits(type);
    return num_elements / traits.block_size * traits.block_bytes;
}

}  // namespace tern
