// AArch64 Advanced SIMD flat polyphase depthwise kernels: 4 floats per q register (f32_dwconv_inl.h).
#include "lowbit/kernels/simd/f32_vec_neon.h"
// the traits first: the template uses them
#include "lowbit/kernels/f32-dwconv/f32_dwconv_inl.h"

namespace LOWBIT_KERNEL_NS {
// No masked load: the split path everywhere (README.md).
LOWBIT_F32_DWCONV_KERNELS(neon, simd::NeonF, 0, 0)
}  // namespace LOWBIT_KERNEL_NS
