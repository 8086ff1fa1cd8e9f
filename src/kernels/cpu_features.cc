#include "kernels/cpu_features.h"

#include <cstdlib>
#include <cstring>

#include "base/log.h"

namespace tern::kernels {

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::kRef: return "ref";
        case Isa::kAvx2: return "avx2";
        case Isa::kAvx512: return "avx512";
    }
    return "unknown";
}

bool cpu_supports(Isa isa) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    switch (isa) {
        case Isa::kRef: return true;
        case Isa::kAvx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
        case Isa::kAvx512:
            return cpu_supports(Isa::kAvx2) && __builtin_cpu_supports("avx512f") &&
                   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                   __builtin_cpu_supports("avx512vnni");
    }
    return false;
#else
    return isa == Isa::kRef;
#endif
}

Isa select_isa() {
    Isa best = Isa::kRef;
    for (Isa candidate : {Isa::kAvx2, Isa::kAvx512}) {
        if (cpu_supports(candidate)) best = candidate;
    }
    const char* forced = std::getenv("TERN_ISA");
    if (forced == nullptr || *forced == '\0') return best;
    for (Isa candidate : {Isa::kRef, Isa::kAvx2, Isa::kAvx512}) {
        if (std::strcmp(forced, isa_name(candidate)) != 0) continue;
        if (cpu_supports(candidate)) return candidate;
        log_warn("TERN_ISA={} is not supported by this CPU; using {}", forced, isa_name(best));
        return best;
    }
    log_warn("TERN_ISA={} is unknown (use avx512, avx2 or ref); using {}", forced, isa_name(best));
    return best;
}

}  // namespace tern::kernels
