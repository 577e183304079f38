// The element-wise kernel sets of this architecture, and the list of ops they serve.
#include "lowbit/kernels/f32-velementwise/velementwise.h"

namespace lowbit {

const std::vector<VElementwiseOp>& velementwise_ops() {
  const auto u = [](const char* op, VUnary k, const char* row, const char* fn) {
    return VElementwiseOp{op, true, static_cast<int>(k), row, fn};
  };
  const auto b = [](const char* op, VBinary k, const char* name) {
    return VElementwiseOp{op, false, static_cast<int>(k), name, name};
  };
  static const std::vector<VElementwiseOp> ops = {
      u("Relu", VUnary::relu, "relu", "relu"),
      u("Clip", VUnary::clamp, "clamp", "clamp"),
      u("LeakyRelu", VUnary::leaky_relu, "lrelu", "leaky_relu"),
      u("HardSigmoid", VUnary::hard_sigmoid, "hardsigmoid", "hard_sigmoid"),
      u("HardSwish", VUnary::hard_swish, "hswish", "hard_swish"),
      u("Sigmoid", VUnary::sigmoid, "sigmoid", "sigmoid"),
      u("SiLU", VUnary::silu, "silu", "silu"),  // lowbit's fused x * Sigmoid(x)
      b("Add", VBinary::add, "add"),
      b("Sub", VBinary::sub, "sub"),
      b("Mul", VBinary::mul, "mul"),
      b("Div", VBinary::div, "div")};
  return ops;
}

const VElementwiseOp* find_velementwise_op(std::string_view op) {
  for (const VElementwiseOp& e : velementwise_ops())
    if (op == e.op) return &e;
  return nullptr;
}

const char* vunary_name(VUnary op) {
  for (const VElementwiseOp& e : velementwise_ops())
    if (e.unary && e.index == static_cast<int>(op)) return e.row;
  return "?";
}

const char* vbinary_name(VBinary op) {
  for (const VElementwiseOp& e : velementwise_ops())
    if (!e.unary && e.index == static_cast<int>(op)) return e.row;
  return "?";
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
