// AVX2+FMA fp32 GEMM micro-kernels (MR x 16 and MR x 8 tiles) and the im2col packer.
// The 6x16 tile keeps 12 ymm accumulators; per k it loads two B vectors and broadcasts six A
// values, so FMA throughput (2 per cycle) rather than loads bounds it.
#include <immintrin.h>

#include <algorithm>

#include "lowbit/kernels/f32-gemm/f32_gemm.h"
#include "lowbit/kernels/simd/f32_vec_avx2.h"

namespace lowbit {
namespace {

// Lane mask with the first n (0..8) lanes set.
inline __m256i lane_mask(size_t n) {
  alignas(32) static const int32_t table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table + 8 - n));
}

template <int MR, int NR>
inline void gemm_tile(size_t nc, size_t kc, const float* __restrict a, const float* __restrict b, float* c, size_t ldc,
                      const F32GemmEpilogue& e) {
  constexpr int NV = NR / 8;
  // Fewer than 8 accumulators cannot hide FMA latency (4 cycles x 2 pipes): narrow tiles run two
  // accumulator sets over even and odd k and add them at the end.
  constexpr int kSets = MR * NV < 8 ? 2 : 1;
  __m256 acc[kSets][MR][NV];
#pragma GCC unroll 8
  for (int s = 0; s < kSets; ++s)
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[s][r][v] = _mm256_setzero_ps();

  const size_t ldb = e.ldb ? e.ldb : NR;
  auto step = [&](int s) {
    // A (the weights, for conv) is read once per pass from memory: keep ~2 KB of it in flight.
    _mm_prefetch(reinterpret_cast<const char*>(a + 512), _MM_HINT_T0);
    __m256 bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = _mm256_loadu_ps(b + v * 8);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[s][r][v] = _mm256_fmadd_ps(av, bv[v], acc[s][r][v]);
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
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[0][r][v] = _mm256_add_ps(acc[0][r][v], acc[1][r][v]);
  }

  const bool full = nc == NR;
  __m256i mask[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    const size_t lo = static_cast<size_t>(v) * 8;
    mask[v] = lane_mask(nc <= lo ? 0 : (nc - lo >= 8 ? 8 : nc - lo));
  }
  if (e.init) {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const float* row = e.init + r * e.ld_init;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v)
        acc[0][r][v] =
            _mm256_add_ps(acc[0][r][v], full ? _mm256_loadu_ps(row + v * 8) : _mm256_maskload_ps(row + v * 8, mask[v]));
    }
  }
  if (e.row_bias) {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 bias = _mm256_broadcast_ss(e.row_bias + r);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[0][r][v] = _mm256_add_ps(acc[0][r][v], bias);
    }
  }
  if (e.col_bias) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const __m256 bias = _mm256_loadu_ps(e.col_bias + v * 8);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) acc[0][r][v] = _mm256_add_ps(acc[0][r][v], bias);
    }
  }
  // max(lo, x) returns x when x is NaN, so NaNs propagate through the clamp.
  const __m256 lo = _mm256_set1_ps(e.min), hi = _mm256_set1_ps(e.max);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    float* row = c + r * ldc;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const __m256 y = _mm256_min_ps(hi, _mm256_max_ps(lo, acc[0][r][v]));
      if (full)
        _mm256_storeu_ps(row + v * 8, y);
      else if (nc > static_cast<size_t>(v) * 8)  // a partial tile: not vmaskmovps (simd::store_first_ps)
        simd::store_first_ps(row + v * 8, y, nc - static_cast<size_t>(v) * 8);
    }
  }
}

}  // namespace

#define LOWBIT_F32_GEMM(MR, NR)                                                                                 \
  void f32_gemm_##MR##x##NR##__avx2(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc, \
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

namespace {

// dst[i] = src[i * 2] for i < len: two loads per 8 outputs, even lanes compacted.
inline void copy_stride2(const float* src, float* dst, size_t len) {
  size_t i = 0;
  const __m256i first7 = lane_mask(7);
  for (; i + 8 <= len; i += 8) {
    const __m256 lo = _mm256_loadu_ps(src + 2 * i);
    const __m256 hi = _mm256_maskload_ps(src + 2 * i + 8, first7);  // never reads past src[2i + 14]
    const __m256 ev = _mm256_shuffle_ps(lo, hi, 0x88);               // l0 l2 h0 h2 | l4 l6 h4 h6
    _mm256_storeu_ps(dst + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), 0xD8)));
  }
  for (; i < len; ++i) dst[i] = src[2 * i];
}

inline void copy_stride1(const float* src, float* dst, size_t len) {
  size_t i = 0;
  for (; i + 8 <= len; i += 8) _mm256_storeu_ps(dst + i, _mm256_loadu_ps(src + i));
  if (i < len) {
    const __m256i m = lane_mask(len - i);
    simd::store_first_ps(dst + i, _mm256_maskload_ps(src + i, m), len - i);
  }
}

}  // namespace

void f32_im2col_pack__avx2(size_t kc, const float* x, const int64_t* koff, const F32Im2colRun* runs, size_t nruns,
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
        _mm256_store_ps(dst + k * nr, _mm256_loadu_ps(src + koff[k]));
        _mm256_store_ps(dst + k * nr + 8, _mm256_loadu_ps(src + koff[k] + 8));
      }
    } else if (stride == 1) {
      for (size_t k = 0; k < kc; ++k) copy_stride1(src + koff[k], dst + k * nr, len);
    } else if (stride == 2) {
      for (size_t k = 0; k < kc; ++k) copy_stride2(src + koff[k], dst + k * nr, len);
    } else {
      for (size_t k = 0; k < kc; ++k)
        for (size_t i = 0; i < len; ++i) dst[k * nr + i] = src[koff[k] + static_cast<int64_t>(i * stride)];
    }
  }
  if (covered < nr)
    for (size_t k = 0; k < kc; ++k) std::fill(b + k * nr + covered, b + k * nr + nr, 0.0f);
}

}  // namespace lowbit
