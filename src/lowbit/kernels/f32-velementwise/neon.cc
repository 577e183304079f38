// AArch64 Advanced SIMD element-wise kernels: 4 floats per q register.
#include <arm_neon.h>

#include "lowbit/kernels/f32-velementwise/velementwise_inl.h"
#include "lowbit/kernels/simd/f32_vec_neon.h"

namespace LOWBIT_KERNEL_NS {
namespace {

using simd::NeonF;

LOWBIT_VELEMENTWISE_KERNELS(neon, NeonF)

}  // namespace

const ::lowbit::F32VElementwiseKernels* f32_velementwise_neon() {
  using F = ::lowbit::Feature;
  static constexpr ::lowbit::F32VElementwiseKernels k =
      make_neon(1u << static_cast<unsigned>(F::neon));
  return &k;
}

}  // namespace LOWBIT_KERNEL_NS
