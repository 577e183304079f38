// AVX2 pooling: 8 output pixels of a row per vector over a padded plane (see f32_pool.h).
#include <immintrin.h>

#include "lowbit/kernels/f32-pool/f32_pool.h"

namespace lowbit {
namespace {

inline __m256i lane_mask(size_t n) {
  alignas(32) static const int32_t table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table + 8 - n));
}

template <int S>
inline __m256 load_strided(const float* src, __m256i gather_idx) {
  if constexpr (S == 1) {
    return _mm256_loadu_ps(src);
  } else if constexpr (S == 2) {
    const __m256 ev = _mm256_shuffle_ps(_mm256_loadu_ps(src), _mm256_loadu_ps(src + 8), 0x88);
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), 0xD8));
  } else {
    return _mm256_i32gather_ps(src, gather_idx, 4);
  }
}

inline void store_row(float* y, size_t n, __m256 v) {
  if (n >= 8)
    _mm256_storeu_ps(y, v);
  else
    _mm256_maskstore_ps(y, lane_mask(n), v);
}

template <int S, bool kMax>
void pool_plane(const float* x, size_t ld_x, const F32PoolGeometry& g, const float* inv_h, const float* inv_w,
                float* y) {
  const size_t SW = S ? S : g.SW;
  const __m256i gidx =
      _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(static_cast<int>(SW)));
  for (size_t oh = 0; oh < g.OH; ++oh) {
    const float* base = x + oh * g.SH * ld_x;
    for (size_t ow = 0; ow < g.OW; ow += 8) {
      __m256 acc = kMax ? _mm256_set1_ps(-__builtin_inff()) : _mm256_setzero_ps();
      for (size_t kh = 0; kh < g.KH; ++kh) {
        const float* row = base + kh * g.DH * ld_x + ow * SW;
        for (size_t kw = 0; kw < g.KW; ++kw) {
          const __m256 v = load_strided<S>(row + kw * g.DW, gidx);
          // max(v, acc) returns acc when v is NaN, like the reference comparison `v > best`.
          acc = kMax ? _mm256_max_ps(v, acc) : _mm256_add_ps(acc, v);
        }
      }
      if constexpr (!kMax)
        acc = _mm256_mul_ps(_mm256_mul_ps(acc, _mm256_set1_ps(inv_h[oh])), _mm256_loadu_ps(inv_w + ow));
      store_row(y + oh * g.OW + ow, g.OW - ow, acc);
    }
  }
}

template <bool kMax>
void pool_dispatch(const float* x, size_t ld_x, const F32PoolGeometry& g, const float* inv_h, const float* inv_w,
                   float* y) {
  if (g.SW == 1)
    pool_plane<1, kMax>(x, ld_x, g, inv_h, inv_w, y);
  else if (g.SW == 2)
    pool_plane<2, kMax>(x, ld_x, g, inv_h, inv_w, y);
  else
    pool_plane<0, kMax>(x, ld_x, g, inv_h, inv_w, y);
}

}  // namespace

void f32_maxpool2d_chw__avx2(const float* x, size_t ld_x, const F32PoolGeometry& g, float* y) {
  pool_dispatch<true>(x, ld_x, g, nullptr, nullptr, y);
}

void f32_avgpool2d_chw__avx2(const float* x, size_t ld_x, const F32PoolGeometry& g, const float* inv_h,
                             const float* inv_w, float* y) {
  pool_dispatch<false>(x, ld_x, g, inv_h, inv_w, y);
}

void f32_global_avgpool__avx2(const float* x, size_t n, size_t channels, float* y) {
  const float scale = 1.0f / static_cast<float>(n);
  for (size_t c = 0; c < channels; ++c, x += n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
      a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
      a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
    }
    if (i + 8 <= n) {
      a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
      i += 8;
    }
    if (i < n) a1 = _mm256_add_ps(a1, _mm256_maskload_ps(x + i, lane_mask(n - i)));
    const __m256 s = _mm256_add_ps(a0, a1);
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    y[c] = _mm_cvtss_f32(q) * scale;
  }
}

}  // namespace lowbit
