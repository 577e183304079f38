#pragma once
// QMul of u8 activations (exact contract: the QMul reference, kernels/reference/quant.cc):
// y[i] = round(clamp(float(a[i] - zp_a) * k[i], qmin, qmax)) + zp_y, with k = float(b - zp_b) * m
// made by the driver per element of B.
#include <cstddef>
#include <cstdint>

namespace lowbit {

struct Qu8MulParams {
  int32_t zp_a = 0, zp_y = 0;
  float qmin = 0.0f, qmax = 255.0f;  // output clamp minus zp_y
};

// One k for all n values (a squeeze-excite channel), or one k per value.
void qu8_vmul_k1__avx2(size_t n, const uint8_t* a, float k, uint8_t* y, const Qu8MulParams& p);
void qu8_vmul_kn__avx2(size_t n, const uint8_t* a, const float* k, uint8_t* y, const Qu8MulParams& p);
void qu8_vmul_k1__neon(size_t n, const uint8_t* a, float k, uint8_t* y, const Qu8MulParams& p);
void qu8_vmul_kn__neon(size_t n, const uint8_t* a, const float* k, uint8_t* y, const Qu8MulParams& p);

struct Qu8VmulKernels {
  void (*k1)(size_t n, const uint8_t* a, float k, uint8_t* y, const Qu8MulParams& p);
  void (*kn)(size_t n, const uint8_t* a, const float* k, uint8_t* y, const Qu8MulParams& p);
};

}  // namespace lowbit
