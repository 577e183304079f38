#pragma once
// Elementwise QAdd of two u8 tensors (exact contract: kernels/qu8-gemm/README.md).
#include <cstddef>
#include <cstdint>

namespace lowbit {

struct Qu8AddParams {
  int32_t zp_a = 0, zp_b = 0, zp_y = 0;
  float sa = 1.0f, sb = 1.0f;        // s_a / s_y, s_b / s_y (float division)
  float qmin = 0.0f, qmax = 255.0f;  // output clamp minus zp_y
};

// y[i] = round(clamp(fma(float(a - zp_a), sa, float(b - zp_b) * sb), qmin, qmax)) + zp_y
void qu8_vadd__avx2(size_t n, const uint8_t* a, const uint8_t* b, uint8_t* y, const Qu8AddParams& p);
void qu8_vadd__neon(size_t n, const uint8_t* a, const uint8_t* b, uint8_t* y, const Qu8AddParams& p);
using Qu8VaddFn = void (*)(size_t n, const uint8_t* a, const uint8_t* b, uint8_t* y, const Qu8AddParams& p);

}  // namespace lowbit
