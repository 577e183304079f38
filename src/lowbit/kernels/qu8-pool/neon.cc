// AArch64 Advanced SIMD u8 pooling (contracts in qu8_pool.h, as the AVX2 kernels): MaxPool takes
// umax over 16 output pixels per step (the phase layout makes every tap a contiguous load);
// GlobalAveragePool sums with uaddlp / uadalp (exact) and requantizes like the reference.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lowbit/kernels/qu8-pool/qu8_avgpool_inl.h"
#include "lowbit/kernels/qu8-pool/qu8_pool.h"

namespace lowbit {

void qu8_pool_phase_row__neon(const uint8_t* src, size_t W, size_t pad_left, size_t SW, size_t ld_phase,
                              uint8_t* dst) {
  if (SW == 1) {
    std::memset(dst, 0, pad_left);
    std::memcpy(dst + pad_left, src, W);
    std::memset(dst + pad_left + W, 0, ld_phase - pad_left - W);
    return;
  }
  std::memset(dst, 0, SW * ld_phase);
  size_t i = 0;
  if (SW == 2) {
    // ld2 splits 32 source bytes into the even and the odd ones: 16 + 16 per step.
    uint8_t* even = dst + (pad_left & 1) * ld_phase + pad_left / 2;
    uint8_t* odd = dst + ((pad_left + 1) & 1) * ld_phase + (pad_left + 1) / 2;
    for (; i + 32 <= W; i += 32) {
      const uint8x16x2_t v = vld2q_u8(src + i);
      vst1q_u8(even + i / 2, v.val[0]);
      vst1q_u8(odd + i / 2, v.val[1]);
    }
  }
  for (; i < W; ++i) {
    const size_t c = pad_left + i;
    dst[(c % SW) * ld_phase + c / SW] = src[i];
  }
}

void qu8_maxpool2d_chw__neon(const uint8_t* x, const Qu8PoolGeometry& g, uint8_t* y) {
  const size_t ld_row = g.SW * g.ld_phase;
  size_t kw_off[64];  // offset of each kernel column within a padded row's phases (per tap past 64)
  const size_t nkw = std::min<size_t>(g.KW, 64);
  for (size_t kw = 0; kw < nkw; ++kw) kw_off[kw] = (kw * g.DW) % g.SW * g.ld_phase + kw * g.DW / g.SW;
  for (size_t oh = 0; oh < g.OH; ++oh) {
    const uint8_t* base = x + oh * g.SH * ld_row;
    uint8_t* yr = y + oh * g.OW;
    for (size_t ow = 0; ow < g.OW; ow += 16) {
      uint8x16_t acc = vdupq_n_u8(0);
      for (size_t kh = 0; kh < g.KH; ++kh) {
        const uint8_t* row = base + kh * g.DH * ld_row + ow;
        for (size_t kw = 0; kw < g.KW; ++kw) {
          const size_t off = kw < 64 ? kw_off[kw] : (kw * g.DW) % g.SW * g.ld_phase + kw * g.DW / g.SW;
          acc = vmaxq_u8(acc, vld1q_u8(row + off));
        }
      }
      const size_t n = g.OW - ow;
      if (n >= 16) {
        vst1q_u8(yr + ow, acc);
      } else {
        uint8_t tmp[16];
        vst1q_u8(tmp, acc);
        std::memcpy(yr + ow, tmp, n);
      }
    }
  }
}

void qu8_global_avgpool__neon(const uint8_t* x, size_t n, size_t channels, const Qu8MeanRequant& r, uint8_t* y) {
  for (size_t c = 0; c < channels; ++c, x += n) {
    uint32x4_t s0 = vdupq_n_u32(0), s1 = s0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
      s0 = vpadalq_u16(s0, vpaddlq_u8(vld1q_u8(x + i)));
      s1 = vpadalq_u16(s1, vpaddlq_u8(vld1q_u8(x + i + 16)));
    }
    if (i + 16 <= n) {
      s0 = vpadalq_u16(s0, vpaddlq_u8(vld1q_u8(x + i)));
      i += 16;
    }
    uint64_t sum = vaddlvq_u32(vaddq_u32(s0, s1));
    for (; i < n; ++i) sum += x[i];
    y[c] = qu8_mean_requant(static_cast<int64_t>(sum), n, r);
  }
}

void qu8_avgpool2d_chw__neon(const uint8_t* x, const Qu8AvgGeometry& g, uint32_t* scratch, uint8_t* y) {
  qu8pool::avgpool_plane(x, g, scratch, y);
}

}  // namespace lowbit
