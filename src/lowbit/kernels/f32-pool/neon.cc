// AArch64 Advanced SIMD pooling: 4 output pixels of a row per vector over a padded plane
// (f32_pool_inl.h).
#include "lowbit/kernels/simd/f32_vec_neon.h"
// the traits first: the template uses them
#include "lowbit/kernels/f32-pool/f32_pool_inl.h"

namespace LOWBIT_KERNEL_NS {
LOWBIT_F32_POOL_KERNELS(neon, simd::NeonF)
}  // namespace LOWBIT_KERNEL_NS
