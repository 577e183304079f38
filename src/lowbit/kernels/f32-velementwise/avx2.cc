// AVX2 + FMA element-wise kernels: 8 floats per ymm (the algorithms: velementwise_inl.h).
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the traits use its intrinsics.
#include "lowbit/kernels/f32-velementwise/velementwise_inl.h"
#include "lowbit/kernels/simd/f32_vec_avx2.h"

namespace LOWBIT_KERNEL_NS {
namespace {

using simd::Avx2F;

LOWBIT_VELEMENTWISE_KERNELS(avx2, Avx2F)

}  // namespace

const ::lowbit::F32VElementwiseKernels* f32_velementwise_avx2() {
  using F = ::lowbit::Feature;
  static constexpr ::lowbit::F32VElementwiseKernels k = make_avx2(
      (1u << static_cast<unsigned>(F::avx2)) | (1u << static_cast<unsigned>(F::fma)));
  return &k;
}

}  // namespace LOWBIT_KERNEL_NS
