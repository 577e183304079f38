// AVX2 + FMA flat polyphase depthwise kernels: 8 floats per ymm (f32_dwconv_inl.h).
#include "lowbit/kernels/simd/f32_vec_avx2.h"
// the traits first: the template uses them
#include "lowbit/kernels/f32-dwconv/f32_dwconv_inl.h"

namespace LOWBIT_KERNEL_NS {
LOWBIT_F32_DWCONV_KERNELS(avx2, simd::Avx2F)
}  // namespace LOWBIT_KERNEL_NS
