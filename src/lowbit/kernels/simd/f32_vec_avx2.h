#pragma once
// The fp32 vector traits of the avx2 kernels (contract: README.md here).
#include <cstddef>
#include <cstdint>
#include "lowbit/kernels/x86_simd.h"

#ifndef LOWBIT_KERNEL_NS
#define LOWBIT_KERNEL_NS lowbit
#endif

namespace LOWBIT_KERNEL_NS::simd {
namespace {

// The first n (0..8) floats of v to p, nothing past them written: 4, 2 and 1 at a time, not
// vmaskmovps. AMD Zen 3 takes about 20 cycles per masked store (independent stores in a loop: 6.6
// ns, against 1.5 for a plain one and 1.0 for a masked load), and the depthwise rows stored one
// per output row and one per copied input row: a 3x3 576 @14 layer spent ~0.1 of its 0.18 ms on
// them. Intel's masked store is a couple of uops; the pieces cost about the same there.
inline void store_first_ps(float* p, __m256 v, size_t n) {
  if (n >= 8) {
    _mm256_storeu_ps(p, v);
    return;
  }
  __m128 x = _mm256_castps256_ps128(v);
  if (n & 4) {
    _mm_storeu_ps(p, x);
    x = _mm256_extractf128_ps(v, 1);
    p += 4;
  }
  if (n & 2) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_castps_si128(x));
    x = _mm_movehl_ps(x, x);
    p += 2;
  }
  if (n & 1) _mm_store_ss(p, x);
}

struct Avx2F {
  using Vec = __m256;
  using Mask = __m256;
  static constexpr size_t kLanes = 8;
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static Vec set1(float f) { return _mm256_set1_ps(f); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static Vec div(Vec a, Vec b) { return _mm256_div_ps(a, b); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec max(Vec c, Vec v) { return _mm256_max_ps(c, v); }  // v when either is NaN
  static Vec min(Vec c, Vec v) { return _mm256_min_ps(c, v); }
  static Mask gt(Vec a, Vec b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static Mask ge(Vec a, Vec b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  static Mask ordered(Vec a) { return _mm256_cmp_ps(a, a, _CMP_ORD_Q); }
  static Vec select(Mask m, Vec a, Vec b) { return _mm256_blendv_ps(b, a, m); }
  static Vec abs(Vec v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
  static Vec round(Vec v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static Vec pow2(Vec n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  // e = p[0], p[2], ..., o = p[1], p[3], ... (2 * kLanes floats from p)
  static void deinterleave(const float* p, Vec& e, Vec& o) { deinterleave(load(p), load(p + 8), e, o); }
  // The same of the 2 * kLanes floats a, b (a's first).
  static void deinterleave(Vec a, Vec b, Vec& e, Vec& o) {
    e = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
    o = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
  }
  // The first n < kLanes floats (no lane past them read or written).
  static __m256i first_lanes(size_t n) {
    alignas(32) static const int32_t table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table + 8 - n));
  }
  static Vec load_n(const float* p, size_t n) { return _mm256_maskload_ps(p, first_lanes(n)); }
  static void store_n(float* p, Vec v, size_t n) { store_first_ps(p, v, n); }
  // Lane i is p[i] where bit i of bits is set, else 0; the other lanes are not read.
  static Vec load_lanes(const float* p, uint32_t bits) {
    const __m256i lane = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i on = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits)), lane), lane);
    return _mm256_maskload_ps(p, on);
  }
  static constexpr bool kMaskedLoads = true;
};

}  // namespace
}  // namespace LOWBIT_KERNEL_NS::simd
