// AVX2 QAdd: 8 values per step through fp32, in the contract's order of operations (the product
// for b rounded first, then one fma for a), so that the bytes match the reference.
#include <immintrin.h>

#include <cstring>

#include "lowbit/kernels/qu8-vadd/qu8_vadd.h"

namespace lowbit {

void qu8_vadd__avx2(size_t n, const uint8_t* a, const uint8_t* b, uint8_t* y, const Qu8AddParams& p) {
  const __m256i zpa = _mm256_set1_epi32(p.zp_a), zpb = _mm256_set1_epi32(p.zp_b), zpy = _mm256_set1_epi32(p.zp_y);
  const __m256 sa = _mm256_set1_ps(p.sa), sb = _mm256_set1_ps(p.sb);
  const __m256 lo = _mm256_set1_ps(p.qmin), hi = _mm256_set1_ps(p.qmax);
  auto step = [&](const uint8_t* pa, const uint8_t* pb) {
    const __m256 fa = _mm256_cvtepi32_ps(
        _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(pa))), zpa));
    const __m256 fb = _mm256_cvtepi32_ps(
        _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(pb))), zpb));
    const __m256 t = _mm256_fmadd_ps(fa, sa, _mm256_mul_ps(fb, sb));
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(t, lo), hi)), zpy);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    return _mm_packus_epi16(w, w);
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), step(a + i, b + i));
  if (i < n) {
    alignas(16) uint8_t ta[8] = {}, tb[8] = {}, ty[16];
    std::memcpy(ta, a + i, n - i);
    std::memcpy(tb, b + i, n - i);
    _mm_store_si128(reinterpret_cast<__m128i*>(ty), step(ta, tb));
    std::memcpy(y + i, ty, n - i);
  }
}

}  // namespace lowbit
