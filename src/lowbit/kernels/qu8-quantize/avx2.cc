// AVX2 QuantizeLinear / DequantizeLinear, 8 values per step, in the reference's operations:
// a true division (vdivps and the scalar '/' round alike: both are IEEE), then round half to even
// (vcvtps2dq under the default MXCSR, as nearbyintf). Clamping to the integer bounds before the
// rounding equals rounding then clamping, keeps the conversion in range, and maps NaN to the lower
// bound (vmaxps returns its second operand for NaN), which is what the reference's saturating
// conversion gives.
#include <immintrin.h>

#include <cstring>

#include "lowbit/kernels/qu8-quantize/qu8_quantize.h"

namespace lowbit {

void qu8_quantize__avx2(size_t n, const float* x, float scale, int32_t zp, int32_t qmax, uint8_t* y) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256 lo = _mm256_set1_ps(static_cast<float>(-zp)), hi = _mm256_set1_ps(static_cast<float>(qmax - zp));
  const __m256i z = _mm256_set1_epi32(zp);
  auto step = [&](__m256 v) {
    const __m256 q = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(v, s), lo), hi);
    return _mm256_add_epi32(_mm256_cvtps_epi32(q), z);  // in [0, qmax]: the packs below never saturate
  };
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i a = step(_mm256_loadu_ps(x + i)), b = step(_mm256_loadu_ps(x + i + 8));
    const __m256i c = step(_mm256_loadu_ps(x + i + 16)), d = step(_mm256_loadu_ps(x + i + 24));
    // packs work per 128-bit lane: [a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7]; restore the order.
    const __m256i bytes = _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    const __m256i ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), ordered);
  }
  for (; i < n; i += 8) {
    alignas(32) float t[8] = {};
    const size_t m = n - i < 8 ? n - i : 8;
    std::memcpy(t, x + i, m * sizeof(float));
    const __m256i q = step(_mm256_load_ps(t));
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    alignas(16) uint8_t out[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(out), _mm_packus_epi16(w, w));
    std::memcpy(y + i, out, m);
  }
}

void qu8_dequantize__avx2(size_t n, const uint8_t* x, float scale, int32_t zp, float* y) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i z = _mm256_set1_epi32(zp);
  auto step = [&](__m128i bytes) {  // low 8 bytes
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(bytes), z)), s);
  };
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_ps(y + i, step(v));
    _mm256_storeu_ps(y + i + 8, step(_mm_unpackhi_epi64(v, v)));
  }
  for (; i < n; i += 8) {
    alignas(16) uint8_t t[16] = {};
    const size_t m = n - i < 8 ? n - i : 8;
    std::memcpy(t, x + i, m);
    alignas(32) float out[8];
    _mm256_store_ps(out, step(_mm_load_si128(reinterpret_cast<const __m128i*>(t))));
    std::memcpy(y + i, out, m * sizeof(float));
  }
}

}  // namespace lowbit
