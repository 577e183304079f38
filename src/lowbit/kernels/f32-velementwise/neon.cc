// AArch64 Advanced SIMD element-wise kernels: 4 floats per q register.
#include <arm_neon.h>

#include "lowbit/kernels/f32-velementwise/velementwise_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

struct NeonF {
  using Vec = float32x4_t;
  using Mask = uint32x4_t;
  static constexpr size_t kLanes = 4;
  static Vec load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, Vec v) { vst1q_f32(p, v); }
  static Vec set1(float f) { return vdupq_n_f32(f); }
  static Vec add(Vec a, Vec b) { return vaddq_f32(a, b); }
  static Vec sub(Vec a, Vec b) { return vsubq_f32(a, b); }
  static Vec mul(Vec a, Vec b) { return vmulq_f32(a, b); }
  static Vec div(Vec a, Vec b) { return vdivq_f32(a, b); }
  static Vec fma(Vec a, Vec b, Vec c) { return vfmaq_f32(c, a, b); }
  static Vec max(Vec c, Vec v) { return vmaxq_f32(c, v); }  // NaN when either is NaN
  static Vec min(Vec c, Vec v) { return vminq_f32(c, v); }
  static Mask gt(Vec a, Vec b) { return vcgtq_f32(a, b); }
  static Mask ge(Vec a, Vec b) { return vcgeq_f32(a, b); }
  static Mask ordered(Vec a) { return vceqq_f32(a, a); }
  static Vec select(Mask m, Vec a, Vec b) { return vbslq_f32(m, a, b); }
  static Vec abs(Vec v) { return vabsq_f32(v); }
  static Vec round(Vec v) { return vrndnq_f32(v); }
  static Vec pow2(Vec n) { return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23)); }
};

LOWBIT_VELEMENTWISE_KERNELS(neon, NeonF)

}  // namespace

const ::lowbit::F32VElementwiseKernels* f32_velementwise_neon() {
  using F = ::lowbit::Feature;
  static constexpr ::lowbit::F32VElementwiseKernels k =
      make_neon(1u << static_cast<unsigned>(F::neon));
  return &k;
}

}  // namespace LOWBIT_KERNEL_NS
