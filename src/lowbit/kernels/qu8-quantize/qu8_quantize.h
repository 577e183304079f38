#pragma once
// ONNX QuantizeLinear (f32 -> u8) and DequantizeLinear (u8 -> f32) with one scale and zero point,
// byte-exact against the reference kernels (kernels/reference/quant.cc).
#include <cstddef>
#include <cstdint>

namespace lowbit {

// y[i] = clamp(nearbyintf(x[i] / scale) + zp, 0, qmax); NaN gives 0, +-inf saturate (as the
// reference). qmax: the codes' upper bound (255 for u8, 15 for u4 codes in u8 storage, 3 for u2).
void qu8_quantize__avx2(size_t n, const float* x, float scale, int32_t zp, int32_t qmax, uint8_t* y);
// y[i] = float(x[i] - zp) * scale
void qu8_dequantize__avx2(size_t n, const uint8_t* x, float scale, int32_t zp, float* y);

// The same contracts in AArch64 Advanced SIMD (neon.cc).
void qu8_quantize__neon(size_t n, const float* x, float scale, int32_t zp, int32_t qmax, uint8_t* y);
void qu8_dequantize__neon(size_t n, const uint8_t* x, float scale, int32_t zp, float* y);

// One row of the dispatch table per ISA shares the driver (operators/quantize_u8.cc).
using Qu8QuantizeFn = void (*)(size_t n, const float* x, float scale, int32_t zp, int32_t qmax, uint8_t* y);
using Qu8DequantizeFn = void (*)(size_t n, const uint8_t* x, float scale, int32_t zp, float* y);

}  // namespace lowbit
