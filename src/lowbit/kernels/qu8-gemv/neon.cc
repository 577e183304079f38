// AArch64 Advanced SIMD int16 x int8 dot products: weights sign-extended in registers (sxtl),
// smlal / smlal2 into int32 (exact: |a| <= 255, |w| <= 128). Four weight rows share each
// activation load.
#include <arm_neon.h>

#include "lowbit/kernels/qu8-gemv/qu8_gemv.h"

namespace lowbit {
namespace {

// s += a[0..16) * w[0..16) in four int32x4 partial sums (two per half of a).
inline void dot16(int32x4_t (&s)[2], int16x8_t a0, int16x8_t a1, const int8_t* w) {
  const int8x16_t wv = vld1q_s8(w);
  const int16x8_t w0 = vmovl_s8(vget_low_s8(wv)), w1 = vmovl_high_s8(wv);
  s[0] = vmlal_s16(s[0], vget_low_s16(a0), vget_low_s16(w0));
  s[1] = vmlal_high_s16(s[1], a0, w0);
  s[0] = vmlal_s16(s[0], vget_low_s16(a1), vget_low_s16(w1));
  s[1] = vmlal_high_s16(s[1], a1, w1);
}

}  // namespace

void qu8_gemv_acc__neon(size_t kp, const int16_t* a, const int8_t* w, size_t ldw, size_t n, int32_t* acc) {
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const int8_t* w0 = w + j * ldw;
    int32x4_t s[4][2];
    for (auto& r : s) r[0] = r[1] = vdupq_n_s32(0);
    for (size_t k = 0; k < kp; k += 16) {
      const int16x8_t a0 = vld1q_s16(a + k), a1 = vld1q_s16(a + k + 8);
      dot16(s[0], a0, a1, w0 + k);
      dot16(s[1], a0, a1, w0 + ldw + k);
      dot16(s[2], a0, a1, w0 + 2 * ldw + k);
      dot16(s[3], a0, a1, w0 + 3 * ldw + k);
    }
    for (int r = 0; r < 4; ++r) acc[j + r] = vaddvq_s32(vaddq_s32(s[r][0], s[r][1]));
  }
  for (; j < n; ++j) {
    int32x4_t s[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
    for (size_t k = 0; k < kp; k += 16) dot16(s, vld1q_s16(a + k), vld1q_s16(a + k + 8), w + j * ldw + k);
    acc[j] = vaddvq_s32(vaddq_s32(s[0], s[1]));
  }
}

}  // namespace lowbit
