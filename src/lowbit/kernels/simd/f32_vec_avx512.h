#pragma once
// The fp32 vector traits of the avx512 kernels (contract: README.md here).
#include <cstddef>
#include <cstdint>
#include "lowbit/kernels/x86_simd.h"

#ifndef LOWBIT_KERNEL_NS
#define LOWBIT_KERNEL_NS lowbit
#endif

namespace LOWBIT_KERNEL_NS::simd {
namespace {

struct Avx512F {
  using Vec = __m512;
  using Mask = __mmask16;
  static constexpr size_t kLanes = 16;
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static Vec set1(float f) { return _mm512_set1_ps(f); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static Vec div(Vec a, Vec b) { return _mm512_div_ps(a, b); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec max(Vec c, Vec v) { return _mm512_max_ps(c, v); }  // v when either is NaN
  static Vec min(Vec c, Vec v) { return _mm512_min_ps(c, v); }
  static Mask gt(Vec a, Vec b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static Mask ge(Vec a, Vec b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  static Mask ordered(Vec a) { return _mm512_cmp_ps_mask(a, a, _CMP_ORD_Q); }
  static Vec select(Mask m, Vec a, Vec b) { return _mm512_mask_blend_ps(m, b, a); }
  static Vec abs(Vec v) { return _mm512_abs_ps(v); }
  static Vec round(Vec v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // n + 1.5 * 2^23 holds n in its low mantissa bits (exact: n is an integer), so its bits + 127,
  // shifted into the exponent field, are 2^n; no float-to-int conversion (SIMDe has no 512-bit one).
  static Vec pow2(Vec n) {
    const __m512i b = _mm512_castps_si512(_mm512_add_ps(n, _mm512_set1_ps(12582912.0f)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(127)), 23));
  }
  // e = p[0], p[2], ..., o = p[1], p[3], ... (2 * kLanes floats from p)
  static void deinterleave(const float* p, Vec& e, Vec& o) { deinterleave(load(p), load(p + 16), e, o); }
  // The same of the 2 * kLanes floats a, b (a's first).
  static void deinterleave(Vec a, Vec b, Vec& e, Vec& o) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    e = _mm512_permutex2var_ps(a, ie, b);
    o = _mm512_permutex2var_ps(a, io, b);
  }
  // The first n < kLanes floats (no lane past them read or written). SIMDe (the emulated build)
  // lacks the masked float moves: lane by lane there.
#ifdef LOWBIT_USE_SIMDE
  static Vec load_n(const float* p, size_t n) {
    alignas(64) float b[16] = {};
    for (size_t i = 0; i < n; ++i) b[i] = p[i];
    return _mm512_load_ps(b);
  }
  static void store_n(float* p, Vec v, size_t n) {
    alignas(64) float b[16];
    _mm512_store_ps(b, v);
    for (size_t i = 0; i < n; ++i) p[i] = b[i];
  }
  static Vec load_lanes(const float* p, uint32_t bits) {
    alignas(64) float b[16] = {};
    for (size_t i = 0; i < 16; ++i)
      if (bits >> i & 1) b[i] = p[i];
    return _mm512_load_ps(b);
  }
#else
  static Vec load_n(const float* p, size_t n) { return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p); }
  static void store_n(float* p, Vec v, size_t n) { _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), v); }
  static Vec load_lanes(const float* p, uint32_t bits) { return _mm512_maskz_loadu_ps(static_cast<__mmask16>(bits), p); }
#endif
  static constexpr bool kMaskedLoads = true;  // load_lanes is one instruction (SIMDe: correctness only)
};

}  // namespace
}  // namespace LOWBIT_KERNEL_NS::simd
