#include "tensor/dtype.h"

#include <array>
#include <cctype>
#include <string>

#include "base/check.h"

namespace tern {
namespace {

constexpr std::array kAllTraits = {
    DTypeTraits{DType::kF32, "f32", 1, 4, true},      DTypeTraits{DType::kF16, "f16", 1, 2, true},
    DTypeTraits{DType::kQ4_0, "q4_0", 32, 18, true},  DTypeTraits{DType::kQ4_1, "q4_1", 32, 20, true},
    DTypeTraits{DType::kQ5_0, "q5_0", 32, 22, true},  DTypeTraits{DType::kQ5_1, "q5_1", 32, 24, true},
    DTypeTraits{DType::kQ8_0, "q8_0", 32, 34, true},  DTypeTraits{DType::kQ8_1, "q8_1", 32, 36, false},
    DTypeTraits{DType::kQ2_K, "q2_K", 256, 84, false}, DTypeTraits{DType::kQ3_K, "q3_K", 256, 110, false},
    DTypeTraits{DType::kQ4_K, "q4_K", 256, 144, true}, DTypeTraits{DType::kQ5_K, "q5_K", 256, 176, true},
    DTypeTraits{DType::kQ6_K, "q6_K", 256, 210, true}, DTypeTraits{DType::kQ8_K, "q8_K", 256, 292, false},
    DTypeTraits{DType::kI8, "i8", 1, 1, false},       DTypeTraits{DType::kI16, "i16", 1, 2, false},
    DTypeTraits{DType::kI32, "i32", 1, 4, false},     DTypeTraits{DType::kI64, "i64", 1, 8, false},
    DTypeTraits{DType::kF64, "f64", 1, 8, false},     DTypeTraits{DType::kBF16, "bf16", 1, 2, true},
};

}  // namespace

std::optional<DTypeTraits> dtype_traits_of(uint32_t ggml_type_id) {
    for (const DTypeTraits& traits : kAllTraits) {
        if (static_cast<uint32_t>(traits.type) == ggml_type_id) return traits;
    }
    return std::nullopt;
}

const DTypeTraits& dtype_traits(DType type) {
    for (const DTypeTraits& traits : kAllTraits) {
        if (traits.type == type) return traits;
    }
    TERN_CHECK(false) << "DType value " << static_cast<uint32_t>(type) << " has no traits";
    return kAllTraits[0];
}

std::optional<DType> dtype_from_name(std::string_view name) {
    std::string lowered(name);
    for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const DTypeTraits& traits : kAllTraits) {
        std::string candidate(traits.name);
        for (char& c : candidate) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (candidate == lowered) return traits.type;
    }
    return std::nullopt;
}

}  // namespace tern
