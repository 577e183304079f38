// Portable element-wise kernels: one float at a time, the same operation sequence as the SIMD
// sets (std::fmaf for every fused multiply-add), so the same bits. On x86-64 baseline fmaf is
// libm's exact software routine: slow, and only used on CPUs without AVX2.
#include <cmath>

#include "lowbit/kernels/f32-velementwise/velementwise_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

struct ScalarF {
  using Vec = float;
  using Mask = bool;
  static constexpr size_t kLanes = 1;
  static Vec load(const float* p) { return *p; }
  static void store(float* p, Vec v) { *p = v; }
  static Vec set1(float f) { return f; }
  static Vec add(Vec a, Vec b) { return a + b; }
  static Vec sub(Vec a, Vec b) { return a - b; }
  static Vec mul(Vec a, Vec b) { return a * b; }
  static Vec div(Vec a, Vec b) { return a / b; }
  static Vec fma(Vec a, Vec b, Vec c) { return std::fmaf(a, b, c); }
  static Vec max(Vec c, Vec v) { return c > v ? c : v; }  // v when either is NaN, as maxps
  static Vec min(Vec c, Vec v) { return c < v ? c : v; }
  static Mask gt(Vec a, Vec b) { return a > b; }
  static Mask ge(Vec a, Vec b) { return a >= b; }
  static Mask ordered(Vec a) { return a == a; }
  static Vec select(Mask m, Vec a, Vec b) { return m ? a : b; }
  static Vec abs(Vec v) { return std::fabs(v); }
  static Vec round(Vec v) { return std::nearbyintf(v); }
  static Vec pow2(Vec n) {
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
};

LOWBIT_VELEMENTWISE_KERNELS(scalar, ScalarF)

}  // namespace

const ::lowbit::F32VElementwiseKernels* f32_velementwise_portable() {
  static constexpr ::lowbit::F32VElementwiseKernels k = make_scalar(0);
  return &k;
}

}  // namespace LOWBIT_KERNEL_NS
