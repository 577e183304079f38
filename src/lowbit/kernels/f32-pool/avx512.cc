// AVX-512F pooling: 16 output pixels of a row per vector over a padded plane (f32_pool_inl.h).
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as the unused merge source, which
// -Wmaybe-uninitialized reports wherever they are inlined (as in f32-velementwise/avx512.cc).
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "lowbit/kernels/simd/f32_vec_avx512.h"
// the traits first: the template uses them
#include "lowbit/kernels/f32-pool/f32_pool_inl.h"

namespace LOWBIT_KERNEL_NS {
LOWBIT_F32_POOL_KERNELS(avx512, simd::Avx512F)
}  // namespace LOWBIT_KERNEL_NS
