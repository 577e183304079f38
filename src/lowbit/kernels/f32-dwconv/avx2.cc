// AVX2+FMA depthwise conv over one padded CHW plane: up to 4 vectors of 8 output pixels of a row
// at a time, the taps accumulated in registers; stride 1 loads directly, stride 2 compacts even
// lanes of two loads, other strides gather.
#include <immintrin.h>

#include "lowbit/kernels/f32-dwconv/f32_dwconv.h"

namespace lowbit {
namespace {

inline __m256i lane_mask(size_t n) {
  alignas(32) static const int32_t table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table + 8 - n));
}

// 8 floats src[0], src[s], ..., src[7s].
template <int S>
inline __m256 load_strided(const float* src, size_t s, __m256i gather_idx) {
  if constexpr (S == 1) {
    return _mm256_loadu_ps(src);
  } else if constexpr (S == 2) {
    const __m256 ev = _mm256_shuffle_ps(_mm256_loadu_ps(src), _mm256_loadu_ps(src + 8), 0x88);
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), 0xD8));
  } else {
    return _mm256_i32gather_ps(src, gather_idx, 4);
  }
}

// NV vectors (8 NV output pixels of a row) at once, each tap sum split over two accumulators:
// 2 NV independent FMA chains. One vector (2 chains) ran latency-bound at 3-15 GFLOP/s on
// EfficientNet-B0's depthwise convs; 4 vectors give 8 chains, what two FMA pipes with 4-cycle
// latency need. The last vector may be partial (masked store; its loads over-read as before).
template <int S, int K, int NV>
inline void dwconv_vectors(const float* base, size_t ld_x, const F32DwconvGeometry& g, size_t KH, size_t KW, size_t SW,
                           __m256i gidx, const float* w, __m256 vb, const float* rr, float* yr, size_t ow, __m256 lo,
                           __m256 hi) {
  __m256 acc0[NV], acc1[NV];
  #pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) acc0[v] = vb, acc1[v] = _mm256_setzero_ps();
  for (size_t kh = 0; kh < KH; ++kh) {
    const float* row = base + kh * g.DH * ld_x + ow * SW;
    size_t kw = 0;
    for (; kw + 1 < KW; kw += 2) {
      const __m256 w0 = _mm256_broadcast_ss(w + kh * KW + kw), w1 = _mm256_broadcast_ss(w + kh * KW + kw + 1);
      #pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const float* r = row + static_cast<size_t>(v) * 8 * SW;
        acc0[v] = _mm256_fmadd_ps(w0, load_strided<S>(r + kw * g.DW, SW, gidx), acc0[v]);
        acc1[v] = _mm256_fmadd_ps(w1, load_strided<S>(r + (kw + 1) * g.DW, SW, gidx), acc1[v]);
      }
    }
    if (kw < KW) {
      const __m256 w0 = _mm256_broadcast_ss(w + kh * KW + kw);
      #pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        acc0[v] = _mm256_fmadd_ps(w0, load_strided<S>(row + static_cast<size_t>(v) * 8 * SW + kw * g.DW, SW, gidx), acc0[v]);
    }
  }
  #pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    __m256 acc = _mm256_add_ps(acc0[v], acc1[v]);
    const size_t o = ow + static_cast<size_t>(v) * 8, n = g.OW - o;
    if (n >= 8) {
      if (rr) acc = _mm256_add_ps(acc, _mm256_loadu_ps(rr + o));
      _mm256_storeu_ps(yr + o, _mm256_min_ps(hi, _mm256_max_ps(lo, acc)));
    } else {
      const __m256i m = lane_mask(n);
      if (rr) acc = _mm256_add_ps(acc, _mm256_maskload_ps(rr + o, m));
      _mm256_maskstore_ps(yr + o, m, _mm256_min_ps(hi, _mm256_max_ps(lo, acc)));
    }
  }
}

template <int S, int K>  // K: 0 = generic kernel size, else K x K taps unrolled
void dwconv_plane(const float* x, size_t ld_x, const F32DwconvGeometry& g, const float* w, float bias, const float* res,
                  float* y, float min, float max) {
  const size_t KH = K ? K : g.KH, KW = K ? K : g.KW, SW = S ? S : g.SW;
  const __m256i gidx =
      _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(static_cast<int>(SW)));
  const __m256 lo = _mm256_set1_ps(min), hi = _mm256_set1_ps(max), vb = _mm256_set1_ps(bias);
  for (size_t oh = 0; oh < g.OH; ++oh) {
    const float* base = x + oh * g.SH * ld_x;
    float* yr = y + oh * g.OW;
    const float* rr = res ? res + oh * g.OW : nullptr;
    size_t ow = 0;
    for (; ow + 24 < g.OW; ow += 32) dwconv_vectors<S, K, 4>(base, ld_x, g, KH, KW, SW, gidx, w, vb, rr, yr, ow, lo, hi);
    const size_t left = (g.OW - ow + 7) / 8;  // 0..3 vectors, the last maybe partial
    if (left == 3) dwconv_vectors<S, K, 3>(base, ld_x, g, KH, KW, SW, gidx, w, vb, rr, yr, ow, lo, hi);
    else if (left == 2) dwconv_vectors<S, K, 2>(base, ld_x, g, KH, KW, SW, gidx, w, vb, rr, yr, ow, lo, hi);
    else if (left == 1) dwconv_vectors<S, K, 1>(base, ld_x, g, KH, KW, SW, gidx, w, vb, rr, yr, ow, lo, hi);
  }
}

}  // namespace

void f32_dwconv2d_chw__avx2(const float* x, size_t ld_x, const F32DwconvGeometry& g, const float* w, float bias,
                            const float* res, float* y, float min, float max) {
  const bool k3 = g.KH == 3 && g.KW == 3;
  if (g.SW == 1)
    (k3 ? dwconv_plane<1, 3> : dwconv_plane<1, 0>)(x, ld_x, g, w, bias, res, y, min, max);
  else if (g.SW == 2)
    (k3 ? dwconv_plane<2, 3> : dwconv_plane<2, 0>)(x, ld_x, g, w, bias, res, y, min, max);
  else
    dwconv_plane<0, 0>(x, ld_x, g, w, bias, res, y, min, max);
}

}  // namespace lowbit
