// A small but complete GGUF image for reader tests: every metadata type, nested arrays, three tensors.
#pragma once

#include <cstdint>
#include <vector>

#include "formats/gguf_writer.h"

namespace tern::testing {

inline GgufWriter make_sample_writer() {
    GgufWriter writer;
    writer.add_string("general.architecture", "llama");
    writer.add_u32("llama.block_count", 2);
    writer.add_i32("sample.negative", -7);
    writer.add_f32("sample.float", 0.25f);
    writer.add_bool("sample.flag", true);
    writer.add_string_array("sample.strings", {"a", "", "héllo"});
    writer.add_f32_array("sample.floats", {1.5f, -2.0f});
    writer.add_i32_array("sample.ints", {1, 2, 3});
    for (GgufType type : {GgufType::kU8, GgufType::kI8, GgufType::kU16, GgufType::kI16, GgufType::kU64,
                          GgufType::kI64, GgufType::kF64}) {
        GgufValue value;
        value.type = type;
        value.int_value = 5;
        value.float_value = 5.0;
        writer.add(std::string("sample.type_") + std::string(gguf_type_name(type)), value);
    }
    GgufValue nested;
    nested.type = GgufType::kArray;
    nested.array_type = GgufType::kArray;
    for (int outer = 0; outer < 2; ++outer) {
        GgufValue inner;
        inner.type = GgufType::kArray;
        inner.array_type = GgufType::kI32;
        for (int item = 0; item <= outer; ++item) {
            GgufValue element;
            element.type = GgufType::kI32;
            element.int_value = outer * 10 + item;
            inner.array.push_back(element);
        }
        nested.array.push_back(inner);
    }
    writer.add("sample.nested", nested);

    std::vector<uint8_t> f32_bytes(4 * 8);
    for (size_t idx = 0; idx < 8; ++idx) {
        const float value = static_cast<float>(idx);
        std::memcpy(&f32_bytes[idx * 4], &value, 4);
    }
    writer.add_tensor_bytes("weights.f32", DType::kF32, {4, 2}, f32_bytes);
    writer.add_tensor_bytes("weights.q8", DType::kQ8_0, {32}, std::vector<uint8_t>(34, 1));
    writer.add_tensor_bytes("bias", DType::kF16, {3}, std::vector<uint8_t>(6, 0));
    return writer;
}

}  // namespace tern::testing
