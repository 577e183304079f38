// AVX-512F flat polyphase depthwise kernels: 16 floats per zmm (f32_dwconv_inl.h).
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as the unused merge source, which
// -Wmaybe-uninitialized reports wherever they are inlined (as in f32-velementwise/avx512.cc).
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "lowbit/kernels/simd/f32_vec_avx512.h"
// the traits first: the template uses them
#include "lowbit/kernels/f32-dwconv/f32_dwconv_inl.h"

namespace LOWBIT_KERNEL_NS {
// The direct paths, stride 1 and stride 2, on every plane: masked loads cost what plain ones do
// (README.md).
LOWBIT_F32_DWCONV_KERNELS(avx512, simd::Avx512F, SIZE_MAX, SIZE_MAX)
}  // namespace LOWBIT_KERNEL_NS
