// Non-x86 builds: the x86 kernel tables do not exist, so dispatch always uses the reference kernels.
#include "kernels/kernels.h"

namespace tern::kernels {
namespace avx512 {
const KernelTable* table() { return nullptr; }
}  // namespace avx512
namespace avx2 {
const KernelTable* table() { return nullptr; }
}  // namespace avx2
}  // namespace tern::kernels
