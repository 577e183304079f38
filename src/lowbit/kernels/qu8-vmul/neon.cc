// NEON QMul: 8 values per step through fp32 in the reference's order of operations (k first,
// then one product; fcvtns rounds half to even), so that the bytes match it and the AVX2 kernel.
#include <arm_neon.h>

#include <cstring>

#include "lowbit/kernels/qu8-vmul/qu8_vmul.h"

namespace lowbit {
namespace {

template <class K>
void vmul(size_t n, const uint8_t* a, K kv, uint8_t* y, const Qu8MulParams& p) {
  const int16x8_t zpa = vdupq_n_s16(static_cast<int16_t>(p.zp_a));
  const int32x4_t zpy = vdupq_n_s32(p.zp_y);
  const float32x4_t lo = vdupq_n_f32(p.qmin), hi = vdupq_n_f32(p.qmax);
  auto half = [&](int16x4_t da, float32x4_t k) {
    const float32x4_t t = vmulq_f32(vcvtq_f32_s32(vmovl_s16(da)), k);
    return vaddq_s32(vcvtnq_s32_f32(vminq_f32(vmaxq_f32(t, lo), hi)), zpy);
  };
  auto step = [&](const uint8_t* pa, size_t i, size_t len) {
    const int16x8_t da = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vld1_u8(pa))), zpa);
    float32x4_t k0, k1;
    kv(i, len, k0, k1);
    return vqmovun_s16(vcombine_s16(vqmovn_s32(half(vget_low_s16(da), k0)), vqmovn_s32(half(vget_high_s16(da), k1))));
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) vst1_u8(y + i, step(a + i, i, 8));
  if (i < n) {
    uint8_t ta[8] = {}, ty[8];
    std::memcpy(ta, a + i, n - i);
    vst1_u8(ty, step(ta, i, n - i));
    std::memcpy(y + i, ty, n - i);
  }
}

}  // namespace

void qu8_vmul_k1__neon(size_t n, const uint8_t* a, float k, uint8_t* y, const Qu8MulParams& p) {
  const float32x4_t kv = vdupq_n_f32(k);
  vmul(n, a, [&](size_t, size_t, float32x4_t& k0, float32x4_t& k1) { k0 = k1 = kv; }, y, p);
}

void qu8_vmul_kn__neon(size_t n, const uint8_t* a, const float* k, uint8_t* y, const Qu8MulParams& p) {
  vmul(n, a, [&](size_t i, size_t len, float32x4_t& k0, float32x4_t& k1) {
    float t[8] = {};
    std::memcpy(t, k + i, len * sizeof(float));
    k0 = vld1q_f32(t);
    k1 = vld1q_f32(t + 4);
  }, y, p);
}

}  // namespace lowbit
