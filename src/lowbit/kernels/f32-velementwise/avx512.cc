// AVX-512F element-wise kernels: 16 floats per zmm, mask registers for the selects.
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as the unused merge source, which
// -Wmaybe-uninitialized reports wherever they are inlined (as in qu8-gemm/avx512vnni.cc).
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the traits use its intrinsics.
#include "lowbit/kernels/f32-velementwise/velementwise_inl.h"
#include "lowbit/kernels/simd/f32_vec_avx512.h"

namespace LOWBIT_KERNEL_NS {
namespace {

using simd::Avx512F;

LOWBIT_VELEMENTWISE_KERNELS(avx512, Avx512F)

}  // namespace

const ::lowbit::F32VElementwiseKernels* f32_velementwise_avx512() {
  using F = ::lowbit::Feature;
  static constexpr ::lowbit::F32VElementwiseKernels k = make_avx512(
      (1u << static_cast<unsigned>(F::avx512f)));
  return &k;
}

}  // namespace LOWBIT_KERNEL_NS
