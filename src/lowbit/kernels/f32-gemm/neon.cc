// AArch64 Advanced SIMD fp32 GEMM micro-kernels (MR x 16 and MR x 8 tiles) and the im2col packer;
// the contracts of f32_gemm.h, as the AVX2 kernels.
// The 6x16 tile keeps 24 of the 32 q registers as accumulators; per k it loads four B vectors and
// the six A values as two vectors, and multiplies by lane (`fmla v.4s, v.4s, v.s[i]`), so no
// broadcasts are needed: 24 fmla per 6 loads.
#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "lowbit/kernels/f32-gemm/f32_gemm.h"

namespace lowbit {
namespace {

// N (1..4) floats into a vector, reading only those (A panels of MR < 4 end at the buffer's end).
template <int N>
inline float32x4_t load_partial(const float* p) {
  if constexpr (N == 4) return vld1q_f32(p);
  else if constexpr (N == 1) return vld1q_dup_f32(p);
  else if constexpr (N == 2) return vcombine_f32(vld1_f32(p), vdup_n_f32(0.0f));
  else return vld1q_lane_f32(p + 2, vcombine_f32(vld1_f32(p), vdup_n_f32(0.0f)), 2);
}

// acc[R] += b * a[R] for every row R, the A value taken by lane (an immediate: hence the pack).
template <int MR, int NV, int... R>
inline void fma_rows(float32x4_t (&acc)[MR][NV], const float32x4_t (&bv)[NV], const float32x4_t (&av)[(MR + 3) / 4],
                     std::integer_sequence<int, R...>) {
  auto row = [&]<int r>() {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = vfmaq_laneq_f32(acc[r][v], bv[v], av[r / 4], r % 4);
  };
  (row.template operator()<R>(), ...);
}

template <int MR, int NR>
inline void gemm_tile(size_t nc, size_t kc, const float* __restrict a, const float* __restrict b, float* c, size_t ldc,
                      const F32GemmEpilogue& e) {
  constexpr int NV = NR / 4, NA = (MR + 3) / 4;
  // Fewer than 8 accumulators cannot hide the fmla latency: narrow tiles run two accumulator sets
  // over even and odd k and add them at the end.
  constexpr int kSets = MR * NV < 8 ? 2 : 1;
  float32x4_t acc[kSets][MR][NV];
#pragma GCC unroll 8
  for (int s = 0; s < kSets; ++s)
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[s][r][v] = vdupq_n_f32(0.0f);

  const size_t ldb = e.ldb ? e.ldb : NR;
  auto step = [&](int s) {
    __builtin_prefetch(a + 384);  // A (the weights, for conv) streams from memory once per pass
    float32x4_t bv[NV], av[NA];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = vld1q_f32(b + v * 4);
#pragma GCC unroll 2
    for (int i = 0; i < NA; ++i) {
      if (i < MR / 4) av[i] = vld1q_f32(a + 4 * i);
      else av[i] = load_partial<MR % 4 == 0 ? 4 : MR % 4>(a + 4 * i);
    }
    fma_rows<MR, NV>(acc[s], bv, av, std::make_integer_sequence<int, MR>());
    a += MR;
    b += ldb;
  };
  size_t k = 0;
  if constexpr (kSets == 2) {
    for (; k + 2 <= kc; k += 2) {
      step(0);
      step(1);
    }
  }
  for (; k < kc; ++k) step(0);
  if constexpr (kSets == 2) {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[0][r][v] = vaddq_f32(acc[0][r][v], acc[1][r][v]);
  }

  // Partial tiles (nc < NR) go through a row buffer: init may alias c, whose row ends at nc.
  const bool full = nc == NR;
  float tmp[NR];
  if (e.init) {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const float* row = e.init + r * e.ld_init;
      if (!full) {
        std::memcpy(tmp, row, nc * sizeof(float));
        row = tmp;
      }
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[0][r][v] = vaddq_f32(acc[0][r][v], vld1q_f32(row + v * 4));
    }
  }
  if (e.row_bias) {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const float32x4_t bias = vld1q_dup_f32(e.row_bias + r);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[0][r][v] = vaddq_f32(acc[0][r][v], bias);
    }
  }
  if (e.col_bias) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const float32x4_t bias = vld1q_f32(e.col_bias + v * 4);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) acc[0][r][v] = vaddq_f32(acc[0][r][v], bias);
    }
  }
  // fmax/fmin (not fmaxnm): a NaN accumulator stays NaN through the clamp, as in the AVX2 kernels.
  const float32x4_t lo = vdupq_n_f32(e.min), hi = vdupq_n_f32(e.max);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    float* row = c + r * ldc;
    float* dst = full ? row : tmp;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) vst1q_f32(dst + v * 4, vminq_f32(hi, vmaxq_f32(lo, acc[0][r][v])));
    if (!full) std::memcpy(row, tmp, nc * sizeof(float));
  }
}

}  // namespace

#define LOWBIT_F32_GEMM(MR, NR)                                                                                 \
  void f32_gemm_##MR##x##NR##__neon(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc, \
                                    const F32GemmEpilogue& e) {                                                 \
    gemm_tile<MR, NR>(nc, kc, a, b, c, ldc, e);                                                                 \
  }
LOWBIT_F32_GEMM(1, 16)
LOWBIT_F32_GEMM(2, 16)
LOWBIT_F32_GEMM(3, 16)
LOWBIT_F32_GEMM(4, 16)
LOWBIT_F32_GEMM(5, 16)
LOWBIT_F32_GEMM(6, 16)
LOWBIT_F32_GEMM(1, 8)
LOWBIT_F32_GEMM(2, 8)
LOWBIT_F32_GEMM(3, 8)
LOWBIT_F32_GEMM(4, 8)
LOWBIT_F32_GEMM(5, 8)
LOWBIT_F32_GEMM(6, 8)
#undef LOWBIT_F32_GEMM

void f32_im2col_pack__neon(size_t kc, const float* x, const int64_t* koff, const F32Im2colRun* runs, size_t nruns,
                           size_t stride, size_t nr, float* b) {
  size_t covered = 0;
  for (size_t s = 0; s < nruns; ++s) {
    const F32Im2colRun& run = runs[s];
    const size_t len = static_cast<size_t>(run.len);
    covered = static_cast<size_t>(run.dst) + len;
    float* dst = b + run.dst;
    const float* src = x + run.src;
    if (stride == 1 && len == 16) {  // the common case: a whole panel from one input row
      for (size_t k = 0; k < kc; ++k) {
        const float* s0 = src + koff[k];
        float* d0 = dst + k * nr;
        vst1q_f32(d0, vld1q_f32(s0));
        vst1q_f32(d0 + 4, vld1q_f32(s0 + 4));
        vst1q_f32(d0 + 8, vld1q_f32(s0 + 8));
        vst1q_f32(d0 + 12, vld1q_f32(s0 + 12));
      }
    } else if (stride == 2) {
      // ld2 de-interleaves 8 floats into even and odd lanes; it reads src[2i + 7], so the last
      // group (whose odd lane may lie past the input) is copied one by one.
      for (size_t k = 0; k < kc; ++k) {
        const float* s0 = src + koff[k];
        float* d0 = dst + k * nr;
        size_t i = 0;
        for (; i + 4 < len; i += 4) vst1q_f32(d0 + i, vld2q_f32(s0 + 2 * i).val[0]);
        for (; i < len; ++i) d0[i] = s0[2 * i];
      }
    } else {
      for (size_t k = 0; k < kc; ++k) {
        const float* s0 = src + koff[k];
        float* d0 = dst + k * nr;
        size_t i = 0;
        if (stride == 1)
          for (; i + 4 <= len; i += 4) vst1q_f32(d0 + i, vld1q_f32(s0 + i));
        for (; i < len; ++i) d0[i] = s0[i * stride];
      }
    }
  }
  if (covered < nr)
    for (size_t k = 0; k < kc; ++k) std::fill(b + k * nr + covered, b + k * nr + nr, 0.0f);
}

}  // namespace lowbit
