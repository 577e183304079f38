// Portable element-wise kernels: one float at a time, the same operation sequence as the SIMD
// sets (std::fmaf for every fused multiply-add), so the same bits. On x86-64 baseline fmaf is
// libm's exact software routine: slow, and only used on CPUs without AVX2.
#include <cmath>

#include "lowbit/kernels/f32-velementwise/velementwise_inl.h"
#include "lowbit/kernels/simd/f32_vec_portable.h"

namespace LOWBIT_KERNEL_NS {
namespace {

using simd::ScalarF;

LOWBIT_VELEMENTWISE_KERNELS(scalar, ScalarF)

}  // namespace

const ::lowbit::F32VElementwiseKernels* f32_velementwise_portable() {
  static constexpr ::lowbit::F32VElementwiseKernels k = make_scalar(0);
  return &k;
}

}  // namespace LOWBIT_KERNEL_NS
