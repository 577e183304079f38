// AVX2 QMul: 8 values per step through fp32 in the reference's order of operations (k first,
// then one product), so that the bytes match it.
#include <immintrin.h>

#include <cstring>

#include "lowbit/kernels/qu8-vmul/qu8_vmul.h"

namespace lowbit {
namespace {

template <class K>
void vmul(size_t n, const uint8_t* a, K kv, uint8_t* y, const Qu8MulParams& p) {
  const __m256i zpa = _mm256_set1_epi32(p.zp_a), zpy = _mm256_set1_epi32(p.zp_y);
  const __m256 lo = _mm256_set1_ps(p.qmin), hi = _mm256_set1_ps(p.qmax);
  auto step = [&](const uint8_t* pa, __m256 k) {
    const __m256 fa = _mm256_cvtepi32_ps(
        _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(pa))), zpa));
    const __m256 t = _mm256_mul_ps(fa, k);
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(t, lo), hi)), zpy);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    return _mm_packus_epi16(w, w);
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), step(a + i, kv(i, 8)));
  if (i < n) {
    alignas(16) uint8_t ta[8] = {}, ty[16];
    std::memcpy(ta, a + i, n - i);
    _mm_store_si128(reinterpret_cast<__m128i*>(ty), step(ta, kv(i, n - i)));
    std::memcpy(y + i, ty, n - i);
  }
}

}  // namespace

void qu8_vmul_k1__avx2(size_t n, const uint8_t* a, float k, uint8_t* y, const Qu8MulParams& p) {
  const __m256 kv = _mm256_set1_ps(k);
  vmul(n, a, [&](size_t, size_t) { return kv; }, y, p);
}

void qu8_vmul_kn__avx2(size_t n, const uint8_t* a, const float* k, uint8_t* y, const Qu8MulParams& p) {
  vmul(n, a, [&](size_t i, size_t len) {
    if (len == 8) return _mm256_loadu_ps(k + i);
    alignas(32) float t[8] = {};
    std::memcpy(t, k + i, len * sizeof(float));
    return _mm256_load_ps(t);
  }, y, p);
}

}  // namespace lowbit
