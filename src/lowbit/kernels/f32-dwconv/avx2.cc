// AVX2 + FMA flat polyphase depthwise kernels: 8 floats per ymm (f32_dwconv_inl.h).
#include "lowbit/kernels/simd/f32_vec_avx2.h"
// the traits first: the template uses them
#include "lowbit/kernels/f32-dwconv/f32_dwconv_inl.h"

namespace LOWBIT_KERNEL_NS {
// The direct path up to 8 vectors a plane (7x7 maps): on 14x14 and larger, vmaskmovps and its mask
// setup made the layers 1.1-1.5x slower than the split (Zen 5 capped to AVX2, README.md).
LOWBIT_F32_DWCONV_KERNELS(avx2, simd::Avx2F, 64)
}  // namespace LOWBIT_KERNEL_NS
