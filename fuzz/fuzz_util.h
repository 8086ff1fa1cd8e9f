// Helpers shared by the fuzz targets: a sink that keeps the optimizer from dropping reads whose only purpose is to
// be checked by AddressSanitizer, and a property check that stops the fuzzer with the reason.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace tern::fuzz {

inline void keep(size_t value) { __asm__ volatile("" : : "g"(value) : "memory"); }

// A property failure is a finding: libFuzzer saves the input that caused the abort.
#define TERN_FUZZ_CHECK(condition, message)                                                \
    do {                                                                                   \
        if (!(condition)) {                                                                \
            std::fprintf(stderr, "fuzz property failed: %s (%s)\n", #condition, message); \
            std::abort();                                                                  \
        }                                                                                  \
    } while (0)

}  // namespace tern::fuzz
