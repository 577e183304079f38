#pragma once
// fp32 element-wise kernels (design: README.md next to this file): activations (unary) and
// arithmetic with the broadcasts CNNs use (binary). Each algorithm is written once
// (velementwise_inl.h, a template over an ISA traits type) and compiled per ISA; every set gives
// the same bits as every other, and the portable set's.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "lowbit/target/target.h"

#ifndef LOWBIT_KERNEL_NS
#define LOWBIT_KERNEL_NS lowbit
#endif

namespace lowbit {

enum class VUnary : uint8_t { relu, clamp, leaky_relu, hard_sigmoid, hard_swish, sigmoid, silu };
constexpr int kVUnaryCount = 7;
// The op's name in kernel names: "f32-vsigmoid-avx2".
const char* vunary_name(VUnary op);

struct VUnaryParams {
  float alpha = 0.0f, beta = 0.0f;                        // LeakyRelu alpha; HardSigmoid alpha, beta
  float lo = -__builtin_inff(), hi = __builtin_inff();  // Clip
};
// y[i] = op(x[i]) for i < n (y may be x).
using VUnaryFn = void (*)(size_t n, const float* x, float* y, const VUnaryParams& p);

enum class VBinary : uint8_t { add, sub, mul, div };
constexpr int kVBinaryCount = 4;
const char* vbinary_name(VBinary op);
// vv: y[i] = a[i] op b[i]; vs: y[i] = a[i] op b[0]; sv: y[i] = a[0] op b[i] (y may be a or b).
using VBinaryFn = void (*)(size_t n, const float* a, const float* b, float* y);

// One ISA's set, constant-initialised in its ISA's file.
struct F32VElementwiseKernels {
  const char* isa = "";    // "avx2": the suffix of its kernel names
  uint32_t features = 0;   // Feature bits the host must have
  VUnaryFn unary[kVUnaryCount] = {};
  VBinaryFn vv[kVBinaryCount] = {}, vs[kVBinaryCount] = {}, sv[kVBinaryCount] = {};
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
