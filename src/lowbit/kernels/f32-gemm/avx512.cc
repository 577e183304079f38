// AVX-512 fp32 GEMM micro-kernels (MR x 32 and MR x 16 tiles), the im2col packer for their
// 32-wide panels and the channels-on-lanes conv's transposing write-back. The MR x 32 tile keeps
// 2 * MR zmm accumulators: per k it loads two B vectors and broadcasts MR A values, so with MR >= 6
// the two 512-bit FMA pipes, not loads, bound it (Zen 5: 98% of the zmm FMA peak at kc >= 256);
// the 32 zmm registers fit MR = 14 (28 accumulators, 2 B vectors, 1 broadcast).
// GCC 12's AVX-512 headers initialise "undefined" vectors with themselves (GCC PR 105593), which
// -W(maybe-)uninitialized reports wherever they are inlined.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

#include "lowbit/kernels/f32-gemm/f32_gemm.h"

namespace lowbit {
namespace {

// The first n (0..16) lanes.
inline __mmask16 lanes(size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

template <int MR, int NR, bool kPrefetch>
inline void gemm_tile(size_t nc, size_t kc, const float* __restrict a, const float* __restrict b, float* c, size_t ldc,
                      const F32GemmEpilogue& e) {
  constexpr int NV = NR / 16;
  // Fewer than 8 accumulators cannot hide FMA latency (4 cycles x 2 pipes): narrow tiles run two
  // accumulator sets over even and odd k and add them at the end.
  constexpr int kSets = MR * NV < 8 ? 2 : 1;
  __m512 acc[kSets][MR][NV];
#pragma GCC unroll 16
  for (int s = 0; s < kSets; ++s)
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[s][r][v] = _mm512_setzero_ps();

  // The caller's lines (a separate instantiation, so tiles without them pay nothing).
  const char* pf = kPrefetch ? reinterpret_cast<const char*>(e.prefetch) : nullptr;
  const char* const pf_last = kPrefetch ? pf + 64 * (e.prefetch_lines - 1) : nullptr;  // then repeated: in range
  // A packed B panel is prefetched 32 rows ahead; an unpacked one (rows ldb apart) one panel to
  // the right, the next panel's same row: the tile after this one's channel panels needs it.
  const size_t ldb = e.ldb ? e.ldb : NR, b_ahead = e.ldb ? NR : 32 * NR;
  auto step = [&](int s) {
    if constexpr (kPrefetch) {
      _mm_prefetch(pf, _MM_HINT_T1);
      pf += pf < pf_last ? 64 : 0;
    }
    // The weights stream from memory once per pass: A in the pixels-on-lanes conv, B in the
    // channels-on-lanes conv and fully-connected layers. Prefetch both ~2-4 KB ahead (one line per
    // step for A, each of B's lines); lines already cached make these no-ops.
    _mm_prefetch(reinterpret_cast<const char*>(a + 512), _MM_HINT_T0);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm_prefetch(reinterpret_cast<const char*>(b + b_ahead + v * 16), _MM_HINT_T0);
    __m512 bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_ps(b + v * 16);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[s][r][v] = _mm512_fmadd_ps(av, bv[v], acc[s][r][v]);
    }
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
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[0][r][v] = _mm512_add_ps(acc[0][r][v], acc[1][r][v]);
  }

  __mmask16 mask[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const size_t lo = static_cast<size_t>(v) * 16;
    mask[v] = lanes(nc <= lo ? 0 : std::min<size_t>(nc - lo, 16));
  }
  if (e.init) {
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const float* row = e.init + r * e.ld_init;
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        acc[0][r][v] = _mm512_add_ps(acc[0][r][v], _mm512_maskz_loadu_ps(mask[v], row + v * 16));
    }
  }
  if (e.row_bias) {
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512 bias = _mm512_set1_ps(e.row_bias[r]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[0][r][v] = _mm512_add_ps(acc[0][r][v], bias);
    }
  }
  if (e.col_bias) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __m512 bias = _mm512_loadu_ps(e.col_bias + v * 16);
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) acc[0][r][v] = _mm512_add_ps(acc[0][r][v], bias);
    }
  }
  // max(lo, x) returns x when x is NaN, so NaNs propagate through the clamp.
  const __m512 lo = _mm512_set1_ps(e.min), hi = _mm512_set1_ps(e.max);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    float* row = c + r * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      _mm512_mask_storeu_ps(row + v * 16, mask[v], _mm512_min_ps(hi, _mm512_max_ps(lo, acc[0][r][v])));
  }
}

}  // namespace

#define LOWBIT_F32_GEMM(MR, NR)                                                                                   \
  void f32_gemm_##MR##x##NR##__avx512(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc, \
                                      const F32GemmEpilogue& e) {                                                 \
    if (e.prefetch_lines)                                                                                         \
      gemm_tile<MR, NR, true>(nc, kc, a, b, c, ldc, e);                                                           \
    else                                                                                                          \
      gemm_tile<MR, NR, false>(nc, kc, a, b, c, ldc, e);                                                          \
  }
LOWBIT_F32_GEMM_AVX512_TILES(LOWBIT_F32_GEMM)
#undef LOWBIT_F32_GEMM

namespace {

// One run's columns for all kc rows: row k copies len = 16 * kFull + tail floats from
// src + koff[k] (stride 1) to dst + k * nr. The run's shape is fixed per call, so the per-row work
// is kFull vector copies and one masked copy: panels made of several runs (output rows narrower
// than the panel) pack nearly as fast as single-run ones.
template <int kFull>
void copy_run_s1(size_t kc, const float* src, const int64_t* koff, float* dst, size_t nr, size_t tail) {
  const __mmask16 m = lanes(tail);
  for (size_t k = 0; k < kc; ++k) {
    const float* s = src + koff[k];
    float* d = dst + k * nr;
#pragma GCC unroll 2
    for (int v = 0; v < kFull; ++v) _mm512_storeu_ps(d + 16 * v, _mm512_loadu_ps(s + 16 * v));
    if (tail) _mm512_mask_storeu_ps(d + 16 * kFull, m, _mm512_maskz_loadu_ps(m, s + 16 * kFull));
  }
}

// As copy_run_s1 with stride 2: 16 outputs from two loads of src[0..30] (the second masked, so
// nothing past the last addressed element is read) and one permute of the even lanes.
template <int kFull>
void copy_run_s2(size_t kc, const float* src, const int64_t* koff, float* dst, size_t nr, size_t tail) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const size_t need = tail ? 2 * tail - 1 : 0;  // the tail reads src[32 kFull .. + need)
  const __mmask16 lo_m = lanes(std::min<size_t>(need, 16)), hi_m = lanes(need > 16 ? need - 16 : 0);
  const __mmask16 st_m = lanes(tail);
  for (size_t k = 0; k < kc; ++k) {
    const float* s = src + koff[k];
    float* d = dst + k * nr;
#pragma GCC unroll 2
    for (int v = 0; v < kFull; ++v) {
      const __m512 lo = _mm512_loadu_ps(s + 32 * v), hi = _mm512_maskz_loadu_ps(lanes(15), s + 32 * v + 16);
      _mm512_storeu_ps(d + 16 * v, _mm512_permutex2var_ps(lo, even, hi));
    }
    if (tail) {
      const __m512 lo = _mm512_maskz_loadu_ps(lo_m, s + 32 * kFull);
      const __m512 hi = _mm512_maskz_loadu_ps(hi_m, s + 32 * kFull + 16);
      _mm512_mask_storeu_ps(d + 16 * kFull, st_m, _mm512_permutex2var_ps(lo, even, hi));
    }
  }
}

}  // namespace

void f32_im2col_pack__avx512(size_t kc, const float* x, const int64_t* koff, const F32Im2colRun* runs, size_t nruns,
                             size_t stride, size_t nr, float* b) {
  size_t covered = 0;
  for (size_t s = 0; s < nruns; ++s) {
    const F32Im2colRun& run = runs[s];
    const size_t len = static_cast<size_t>(run.len), full = len / 16, tail = len % 16;
    covered = static_cast<size_t>(run.dst) + len;
    float* dst = b + run.dst;
    const float* src = x + run.src;
    if ((stride == 1 || stride == 2) && full <= 2) {  // runs are at most a panel (32) wide
      auto copy = stride == 1 ? (full == 0 ? copy_run_s1<0> : full == 1 ? copy_run_s1<1> : copy_run_s1<2>)
                              : (full == 0 ? copy_run_s2<0> : full == 1 ? copy_run_s2<1> : copy_run_s2<2>);
      copy(kc, src, koff, dst, nr, tail);
    } else {
      for (size_t k = 0; k < kc; ++k)
        for (size_t i = 0; i < len; ++i) dst[k * nr + i] = src[koff[k] + static_cast<int64_t>(i * stride)];
    }
  }
  if (covered < nr)
    for (size_t k = 0; k < kc; ++k) std::fill(b + k * nr + covered, b + k * nr + nr, 0.0f);
}

namespace {

// r[j] <- column j of the 16 x 16 matrix whose rows are r[0..15].
inline void transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // u[4i + c], 128-bit lane L: column 4L + c of rows 4i..4i+3
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    u[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44), v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xEE);
    const __m512 w0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44);
    const __m512 w1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xEE);
    r[c] = _mm512_shuffle_f32x4(v0, w0, 0x88);
    r[c + 4] = _mm512_shuffle_f32x4(v0, w0, 0xDD);
    r[c + 8] = _mm512_shuffle_f32x4(v1, w1, 0x88);
    r[c + 12] = _mm512_shuffle_f32x4(v1, w1, 0xDD);
  }
}

}  // namespace

void f32_transpose_store__avx512(size_t np, size_t nc, const float* ct, size_t ldc, const float* res, float* y,
                                 size_t ldy, float min, float max) {
  const __m512 lo = _mm512_set1_ps(min), hi = _mm512_set1_ps(max);
  for (size_t m0 = 0; m0 < nc; m0 += 16) {
    const size_t mc = std::min<size_t>(16, nc - m0);
    const __mmask16 mmask = lanes(mc);
    for (size_t q0 = 0; q0 < np; q0 += 16) {
      const size_t qc = std::min<size_t>(16, np - q0);
      const __mmask16 qmask = lanes(qc);
      __m512 r[16];
#pragma GCC unroll 16
      for (size_t q = 0; q < 16; ++q)
        r[q] = q < qc ? _mm512_maskz_loadu_ps(mmask, ct + (q0 + q) * ldc + m0) : _mm512_setzero_ps();
      transpose16(r);
      for (size_t j = 0; j < mc; ++j) {
        const size_t at = (m0 + j) * ldy + q0;
        __m512 v = r[j];
        if (res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(qmask, res + at));
        _mm512_mask_storeu_ps(y + at, qmask, _mm512_min_ps(hi, _mm512_max_ps(lo, v)));
      }
    }
  }
}

}  // namespace lowbit
