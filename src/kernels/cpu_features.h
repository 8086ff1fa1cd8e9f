// The instruction sets this CPU offers, read once from CPUID.
#pragma once

#include <string>

namespace tern::kernels {

enum class Isa { kRef, kAvx2, kAvx512 };

const char* isa_name(Isa isa);

// Whether the CPU (and OS) can run kernels built for `isa`: avx2 needs AVX2+FMA+F16C; avx512 needs
// AVX-512 F/BW/VL and VNNI.
bool cpu_supports(Isa isa);

// The best supported ISA, or the one forced by TERN_ISA=avx512|avx2|ref (an unsupported or unknown value
// falls back to the best with a warning).
Isa select_isa();

}  // namespace tern::kernels
