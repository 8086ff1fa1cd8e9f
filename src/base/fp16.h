// IEEE half and bfloat16 conversions (bit-exact with ggml's scalar paths, round-to-nearest-even).
#pragma once

#include <cstdint>
#include <cstring>

namespace tern {

inline float fp32_from_bits(uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
}

inline uint32_t fp32_to_bits(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
}

inline float fp16_to_fp32(uint16_t half) {
    const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
    const uint32_t exponent = (half >> 10) & 0x1fu;
    uint32_t mantissa = half & 0x3ffu;
    if (exponent == 0) {
        if (mantissa == 0) return fp32_from_bits(sign);
        // Subnormal half: renormalise into a normal float.
        int shift = 0;
        while ((mantissa & 0x400u) == 0) {
            mantissa <<= 1;
            ++shift;
        }
        mantissa &= 0x3ffu;
        return fp32_from_bits(sign | static_cast<uint32_t>(113 - shift) << 23 | mantissa << 13);
    }
    if (exponent == 0x1f) return fp32_from_bits(sign | 0x7f800000u | mantissa << 13);
    return fp32_from_bits(sign | (exponent + 112) << 23 | mantissa << 13);
}

inline uint16_t fp32_to_fp16(float value) {
    const uint32_t bits = fp32_to_bits(value);
    const uint32_t sign = (bits >> 16) & 0x8000u;
    const uint32_t abs_bits = bits & 0x7fffffffu;
    if (abs_bits >= 0x7f800000u) {  // inf or nan
        return static_cast<uint16_t>(sign | 0x7c00u | (abs_bits > 0x7f800000u ? 0x200u : 0u));
    }
    if (abs_bits >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (abs_bits < 0x38800000u) {                                               // subnormal or zero half
        if (abs_bits < 0x33000000u) return static_cast<uint16_t>(sign);
        const uint32_t exponent = abs_bits >> 23;
        const uint32_t mantissa = (abs_bits & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - exponent;
        uint32_t half_mantissa = mantissa >> shift;
        const uint32_t remainder = mantissa & ((1u << shift) - 1);
        const uint32_t halfway = 1u << (shift - 1);
        if (remainder > halfway || (remainder == halfway && (half_mantissa & 1u))) ++half_mantissa;
        return static_cast<uint16_t>(sign | half_mantissa);
    }
    uint32_t half = ((abs_bits >> 13) - (112u << 10));
    const uint32_t remainder = abs_bits & 0x1fffu;
    if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
}

inline float bf16_to_fp32(uint16_t value) { return fp32_from_bits(static_cast<uint32_t>(value) << 16); }

inline uint16_t fp32_to_bf16(float value) {
    const uint32_t bits = fp32_to_bits(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 64u);  // quiet nan
    return static_cast<uint16_t>((bits + (0x7fffu + ((bits >> 16) & 1u))) >> 16);
}

}  // namespace tern
