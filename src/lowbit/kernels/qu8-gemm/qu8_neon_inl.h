#pragma once
// Shared by the AArch64 qu8 ISA sources (neon.cc, neondot.cc): im2col row gathering, small exact
// loads and the exact requantization epilogue on 4-lane vectors. Everything is in an anonymous
// namespace: each ISA file compiles its own copy with its own -march, so no copy built for
// dotprod can be linked into the plain NEON kernels.
#include <arm_neon.h>

#include <cstring>
#include <utility>

#include "lowbit/kernels/qu8-gemm/qu8_gemm.h"

namespace lowbit {
namespace {

// t receives nr bytes of row xk (x + koff) for the panel's runs (in pixel order); t must hold
// nr + 32 bytes (vector moves spill past a run; the gap after it is filled and the next run written
// after that, bytes past nr are ignored). Bytes no run covers are set to zp: the gaps between runs
// too, where a conv's padding falls without a padded copy.
inline void qu8_gather_row_neon(const uint8_t* x, size_t avail, int64_t koff, const Qu8Im2colRun* runs, size_t nruns,
                                size_t stride, size_t nr, uint8_t zp, uint8_t* t) {
  size_t covered = 0;
  for (size_t s = 0; s < nruns; ++s) {
    const Qu8Im2colRun& run = runs[s];
    const size_t off = static_cast<size_t>(koff + run.src), len = static_cast<size_t>(run.len);
    const uint8_t* src = x + off;
    uint8_t* dst = t + run.dst;
    if (static_cast<size_t>(run.dst) > covered) std::memset(t + covered, zp, static_cast<size_t>(run.dst) - covered);
    covered = static_cast<size_t>(run.dst) + len;
    if (stride == 1 && len <= 16 && off + 16 <= avail) {
      vst1q_u8(dst, vld1q_u8(src));
    } else if (stride == 2 && len <= 16 && off + 32 <= avail) {
      vst1q_u8(dst, vld2q_u8(src).val[0]);  // ld2 de-interleaves: even bytes in val[0]
    } else {
      for (size_t i = 0; i < len; ++i) dst[i] = src[i * stride];
    }
  }
  if (covered < nr) std::memset(t + covered, zp, nr - covered);
}

// The first N bytes at p in a vector, reading only those (weight panels end with the buffer).
template <int N>
inline int8x16_t load_s8_partial(const int8_t* p) {
  static_assert(N % 4 == 0 && N >= 4 && N <= 16);
  if constexpr (N == 16) return vld1q_s8(p);
  int32_t w;
  if constexpr (N == 4) {
    std::memcpy(&w, p, 4);
    return vreinterpretq_s8_s32(vdupq_n_s32(w));
  } else if constexpr (N == 8) {
    return vcombine_s8(vld1_s8(p), vdup_n_s8(0));
  } else {
    std::memcpy(&w, p + 8, 4);
    return vcombine_s8(vld1_s8(p), vreinterpret_s8_s32(vdup_n_s32(w)));
  }
}

// NR u8 values (nc valid) widened into NR / 4 int32 vectors.
template <int NR>
inline void load_u8_as_s32(const uint8_t* p, size_t nc, int32x4_t (&v)[NR / 4]) {
  uint8_t tmp[16] = {};
  if (nc < NR) {
    std::memcpy(tmp, p, nc);
    p = tmp;
  }
#pragma GCC unroll 2
  for (int h = 0; h < NR / 8; ++h) {
    const uint16x8_t w = vmovl_u8(vld1_u8(p + 8 * h));
    v[2 * h] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(w)));
    v[2 * h + 1] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(w)));
  }
}

// Requantizes NR int32 accumulators of one row and stores nc bytes (README.md, exact contract):
// fcvtns rounds half to even like nearbyintf; vfmaq_f32 is the fused fmaf of the reference.
template <int NR>
inline void qu8_requant_store_row_neon(const int32x4_t (&acc)[NR / 4], size_t nc, int r, uint8_t* c,
                                       const Qu8GemmEpilogue& e) {
  constexpr int NV = NR / 4;
  const float32x4_t scale = vdupq_n_f32(e.scale[r]), bias = vdupq_n_f32(e.bias[r]);
  float32x4_t t[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) t[v] = vfmaq_f32(bias, vcvtq_f32_s32(acc[v]), scale);
  if (e.res) {
    int32x4_t rv[NV];
    load_u8_as_s32<NR>(e.res + r * e.ld_res, nc, rv);
    const int32x4_t zp = vdupq_n_s32(e.res_zp);
    const float32x4_t rs = vdupq_n_f32(e.res_scale);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) t[v] = vfmaq_f32(t[v], vcvtq_f32_s32(vsubq_s32(rv[v], zp)), rs);
  }
  // Clamping to integer bounds before rounding equals rounding then clamping, and keeps the
  // conversion in range; the narrowing below then never saturates.
  const float32x4_t lo = vdupq_n_f32(e.qmin), hi = vdupq_n_f32(e.qmax);
  const int32x4_t zp = vdupq_n_s32(e.zp_y);
  int32x4_t q[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) q[v] = vaddq_s32(vcvtnq_s32_f32(vminq_f32(vmaxq_f32(t[v], lo), hi)), zp);
  uint8x8_t y[NR / 8];
#pragma GCC unroll 2
  for (int h = 0; h < NR / 8; ++h) y[h] = vqmovun_s16(vcombine_s16(vqmovn_s32(q[2 * h]), vqmovn_s32(q[2 * h + 1])));
  if (nc == NR) {
#pragma GCC unroll 2
    for (int h = 0; h < NR / 8; ++h) vst1_u8(c + 8 * h, y[h]);
  } else {
    uint8_t tmp[NR];
#pragma GCC unroll 2
    for (int h = 0; h < NR / 8; ++h) vst1_u8(tmp + 8 * h, y[h]);
    std::memcpy(c, tmp, nc);
  }
}

}  // namespace
}  // namespace lowbit
