#include <arm_neon.h>

#include "lowbit/kernels/qu8-lut/qu8_lut.h"

namespace lowbit {

// 16 codes at a time: tbl looks up 64 table entries (four registers) and writes 0 where the index
// is past them; tbx over the next quarter with the index less 64 fills in what tbl left, and so on:
// four lookups per 16 bytes. The tail goes through a 16-byte buffer.
void qu8_lut__neon(size_t n, const uint8_t* x, uint8_t* y, const uint8_t* table) {
  const uint8x16x4_t q0 = vld1q_u8_x4(table), q1 = vld1q_u8_x4(table + 64), q2 = vld1q_u8_x4(table + 128),
                     q3 = vld1q_u8_x4(table + 192);
  const uint8x16_t k64 = vdupq_n_u8(64);
  auto lookup = [&](uint8x16_t v) {
    uint8x16_t r = vqtbl4q_u8(q0, v);
    v = vsubq_u8(v, k64);
    r = vqtbx4q_u8(r, q1, v);
    v = vsubq_u8(v, k64);
    r = vqtbx4q_u8(r, q2, v);
    v = vsubq_u8(v, k64);
    return vqtbx4q_u8(r, q3, v);
  };
  size_t i = 0;
  for (; i + 16 <= n; i += 16) vst1q_u8(y + i, lookup(vld1q_u8(x + i)));
  if (i < n) {
    uint8_t buf[16] = {};
    for (size_t j = 0; j < n - i; ++j) buf[j] = x[i + j];
    vst1q_u8(buf, lookup(vld1q_u8(buf)));
    for (size_t j = 0; j < n - i; ++j) y[i + j] = buf[j];
  }
}

}  // namespace lowbit
