#pragma once
// fp32 element-wise kernels (design: README.md next to this file): activations (unary) and
// arithmetic with the broadcasts CNNs use (binary). Each algorithm is written once
// (velementwise_inl.h, a template over an ISA traits type) and compiled per ISA; every set gives
// the same bits as every other, and the portable set's.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "lowbit/target/target.h"

#ifndef LOWBIT_KERNEL_NS
#define LOWBIT_KERNEL_NS lowbit
#endif

namespace lowbit {

enum class VUnary : uint8_t { relu, clamp, leaky_relu, hard_sigmoid, hard_swish, sigmoid, silu };
constexpr int kVUnaryCount = 7;

struct VUnaryParams {
  float alpha = 0.0f, beta = 0.0f;                        // LeakyRelu alpha; HardSigmoid alpha, beta
  float lo = -__builtin_inff(), hi = __builtin_inff();  // Clip
};
// y[i] = op(x[i]) for i < n (y may be x).
using VUnaryFn = void (*)(size_t n, const float* x, float* y, const VUnaryParams& p);

enum class VBinary : uint8_t { add, sub, mul, div };
constexpr int kVBinaryCount = 4;

// The one list of the ops these kernels serve: the graph op, which kernel of a set runs it, and
// its names (dispatch row "f32-v<row>-<isa>", micro-kernel "f32_v<fn>__<isa>"). The dispatch table,
// the driver and the tests all read it.
struct VElementwiseOp {
  const char* op;  // "Sigmoid"
  bool unary;
  int index;       // VUnary or VBinary
  const char* row;
  const char* fn;
};
const std::vector<VElementwiseOp>& velementwise_ops();
const VElementwiseOp* find_velementwise_op(std::string_view op);
const char* vunary_name(VUnary op);    // its row name: "sigmoid"
const char* vbinary_name(VBinary op);
// vv: y[i] = a[i] op b[i]; vs: y[i] = a[i] op b[0]; sv: y[i] = a[0] op b[i] (y may be a or b).
using VBinaryFn = void (*)(size_t n, const float* a, const float* b, float* y);

// y[i] = min(hi, max(lo, fma(x[i], scale, shift))) for i < n: an inference BatchNormalization's
// channel with its fused Relu / Clip (lo = -inf, hi = +inf without one). One rounding, explicit,
// so every set gives the same bits (the reference rounds the product too: within 1 ulp of it).
using VAffineFn = void (*)(size_t n, const float* x, float* y, float scale, float shift, float lo, float hi);

// One ISA's set, constant-initialised in its ISA's file.
struct F32VElementwiseKernels {
  const char* isa = "";    // "avx2": the suffix of its kernel names
  uint32_t features = 0;   // Feature bits the host must have
  VUnaryFn unary[kVUnaryCount] = {};
  VBinaryFn vv[kVBinaryCount] = {}, vs[kVBinaryCount] = {}, sv[kVBinaryCount] = {};
  VAffineFn affine = nullptr;
  bool runs_on(const Target& t) const { return (t.features & features) == features; }
};

// Every set compiled for this architecture, fastest first, the portable one last.
const std::vector<const F32VElementwiseKernels*>& f32_velementwise_sets();

}  // namespace lowbit

namespace LOWBIT_KERNEL_NS {
const ::lowbit::F32VElementwiseKernels* f32_velementwise_portable();
const ::lowbit::F32VElementwiseKernels* f32_velementwise_avx2();    // x86-64 builds
const ::lowbit::F32VElementwiseKernels* f32_velementwise_avx512();  // x86-64 builds
const ::lowbit::F32VElementwiseKernels* f32_velementwise_neon();    // AArch64 builds
}  // namespace LOWBIT_KERNEL_NS
