// The element-wise kernel sets of this architecture, and the op names kernel names use.
#include "lowbit/kernels/f32-velementwise/velementwise.h"

namespace lowbit {

const char* vunary_name(VUnary op) {
  static constexpr const char* kNames[kVUnaryCount] = {"relu",     "clamp",   "lrelu", "hardsigmoid",
                                                       "hardswish", "sigmoid", "silu"};
  return kNames[static_cast<int>(op)];
}

const char* vbinary_name(VBinary op) {
  static constexpr const char* kNames[kVBinaryCount] = {"add", "sub", "mul", "div"};
  return kNames[static_cast<int>(op)];
}

const std::vector<const F32VElementwiseKernels*>& f32_velementwise_sets() {
  static const std::vector<const F32VElementwiseKernels*> sets = {
#if defined(__x86_64__)
      f32_velementwise_avx512(), f32_velementwise_avx2(),
#elif defined(__aarch64__)
      f32_velementwise_neon(),
#endif
      f32_velementwise_portable()};
  return sets;
}

}  // namespace lowbit
