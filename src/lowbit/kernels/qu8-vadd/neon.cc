// NEON QAdd: 8 values per step through fp32, in the contract's order of operations (the product
// for b rounded first, then one fused multiply-add for a; fcvtns rounds half to even), so that the
// bytes match the reference and the AVX2 kernel.
#include <arm_neon.h>

#include <cstring>

#include "lowbit/kernels/qu8-vadd/qu8_vadd.h"

namespace lowbit {

void qu8_vadd__neon(size_t n, const uint8_t* a, const uint8_t* b, uint8_t* y, const Qu8AddParams& p) {
  const int16x8_t zpa = vdupq_n_s16(static_cast<int16_t>(p.zp_a)), zpb = vdupq_n_s16(static_cast<int16_t>(p.zp_b));
  const int32x4_t zpy = vdupq_n_s32(p.zp_y);
  const float32x4_t sa = vdupq_n_f32(p.sa), sb = vdupq_n_f32(p.sb), lo = vdupq_n_f32(p.qmin), hi = vdupq_n_f32(p.qmax);
  auto half = [&](int16x4_t da, int16x4_t db) {
    const float32x4_t t = vfmaq_f32(vmulq_f32(vcvtq_f32_s32(vmovl_s16(db)), sb), vcvtq_f32_s32(vmovl_s16(da)), sa);
    return vaddq_s32(vcvtnq_s32_f32(vminq_f32(vmaxq_f32(t, lo), hi)), zpy);
  };
  auto step = [&](const uint8_t* pa, const uint8_t* pb) {
    const int16x8_t da = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vld1_u8(pa))), zpa);
    const int16x8_t db = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vld1_u8(pb))), zpb);
    const int32x4_t q0 = half(vget_low_s16(da), vget_low_s16(db)), q1 = half(vget_high_s16(da), vget_high_s16(db));
    return vqmovun_s16(vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1)));
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) vst1_u8(y + i, step(a + i, b + i));
  if (i < n) {
    uint8_t ta[8] = {}, tb[8] = {}, ty[8];
    std::memcpy(ta, a + i, n - i);
    std::memcpy(tb, b + i, n - i);
    vst1_u8(ty, step(ta, tb));
    std::memcpy(y + i, ty, n - i);
  }
}

}  // namespace lowbit
