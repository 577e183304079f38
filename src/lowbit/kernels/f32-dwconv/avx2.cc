// AVX2 + FMA flat polyphase depthwise kernels: 8 floats per ymm (f32_dwconv_inl.h).
#include "lowbit/kernels/simd/f32_vec_avx2.h"
// the traits first: the template uses them
#include "lowbit/kernels/f32-dwconv/f32_dwconv_inl.h"

namespace LOWBIT_KERNEL_NS {
// The direct path up to 14x14 planes: there it beats the split on AMD Zen 3 (3x3 576 @14 0.132 ->
// 0.114 ms); on 28x28 and larger planes vmaskmovps and its mask setup make the layers 1.2-1.7x
// slower than the split (README.md). The stride-2 direct path nowhere: every load a vmaskmovps, it
// ran 3x3/2 96 @112 at 0.42 -> 0.56 ms on an Intel Xeon capped to AVX2.
LOWBIT_F32_DWCONV_KERNELS(avx2, simd::Avx2F, 256, 0)
}  // namespace LOWBIT_KERNEL_NS
