// AArch64 Advanced SIMD QuantizeLinear / DequantizeLinear, 16 values per step, in the reference's
// operations (as the AVX2 kernels): a true division (fdiv, IEEE), clamped to the integer bounds with
// fmaxnm / fminnm, then rounded half to even (fcvtns). fmaxnm returns the number when one operand is
// NaN, so NaN becomes the lower bound, as the reference's saturating conversion gives; plain fmax
// would propagate the NaN into the conversion (0, then + zp: a wrong code). Clamping before the
// rounding equals rounding then clamping (the bounds are integers) and keeps the narrowing below
// from saturating.
#include <arm_neon.h>

#include <cstring>

#include "lowbit/kernels/qu8-quantize/qu8_quantize.h"

namespace lowbit {

void qu8_quantize__neon(size_t n, const float* x, float scale, int32_t zp, int32_t qmax, uint8_t* y) {
  const float32x4_t s = vdupq_n_f32(scale);
  const float32x4_t lo = vdupq_n_f32(static_cast<float>(-zp)), hi = vdupq_n_f32(static_cast<float>(qmax - zp));
  const int32x4_t z = vdupq_n_s32(zp);
  auto step = [&](float32x4_t v) { return vaddq_s32(vcvtnq_s32_f32(vminnmq_f32(vmaxnmq_f32(vdivq_f32(v, s), lo), hi)), z); };
  // Codes are in [0, qmax]: the saturating narrowings never clip.
  auto bytes = [&](const float* p) {
    const int16x8_t ab = vcombine_s16(vqmovn_s32(step(vld1q_f32(p))), vqmovn_s32(step(vld1q_f32(p + 4))));
    const int16x8_t cd = vcombine_s16(vqmovn_s32(step(vld1q_f32(p + 8))), vqmovn_s32(step(vld1q_f32(p + 12))));
    return vcombine_u8(vqmovun_s16(ab), vqmovun_s16(cd));
  };
  size_t i = 0;
  for (; i + 16 <= n; i += 16) vst1q_u8(y + i, bytes(x + i));
  if (i < n) {
    float t[16] = {};
    uint8_t out[16];
    std::memcpy(t, x + i, (n - i) * sizeof(float));
    vst1q_u8(out, bytes(t));
    std::memcpy(y + i, out, n - i);
  }
}

void qu8_dequantize__neon(size_t n, const uint8_t* x, float scale, int32_t zp, float* y) {
  const float32x4_t s = vdupq_n_f32(scale);
  const int32x4_t z = vdupq_n_s32(zp);
  // x - zp is exact in int32 and in float (|x - zp| <= 255): one rounding, the multiply, as the reference.
  auto quarter = [&](uint16x4_t v) { return vmulq_f32(vcvtq_f32_s32(vsubq_s32(vreinterpretq_s32_u32(vmovl_u16(v)), z)), s); };
  auto run16 = [&](const uint8_t* p, float* q) {
    const uint8x16_t v = vld1q_u8(p);
    const uint16x8_t lo = vmovl_u8(vget_low_u8(v)), hi = vmovl_u8(vget_high_u8(v));
    vst1q_f32(q, quarter(vget_low_u16(lo)));
    vst1q_f32(q + 4, quarter(vget_high_u16(lo)));
    vst1q_f32(q + 8, quarter(vget_low_u16(hi)));
    vst1q_f32(q + 12, quarter(vget_high_u16(hi)));
  };
  size_t i = 0;
  for (; i + 16 <= n; i += 16) run16(x + i, y + i);
  if (i < n) {
    uint8_t t[16] = {};
    float out[16];
    std::memcpy(t, x + i, n - i);
    run16(t, out);
    std::memcpy(y + i, out, (n - i) * sizeof(float));
  }
}

}  // namespace lowbit
