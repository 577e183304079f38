// AVX2 int16 x int8 dot products: weights sign-extended in registers (vpmovsxbw), vpmaddwd into
// int32 (exact: |a| <= 255, |w| <= 128). Four weight rows share each activation load.
#include <immintrin.h>

#include "lowbit/kernels/qu8-gemv/qu8_gemv.h"

namespace lowbit {
namespace {

inline int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

inline __m256i wload(const int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

}  // namespace

void qu8_gemv_acc__avx2(size_t kp, const int16_t* a, const int8_t* w, size_t ldw, size_t n, int32_t* acc) {
  size_t j = 0;
  // Eight rows per pass: the weights usually come from beyond L2, and more concurrent streams
  // keep more misses in flight.
  for (; j + 8 <= n; j += 8) {
    const int8_t* w0 = w + j * ldw;
    __m256i s[8];
    for (int r = 0; r < 8; ++r) s[r] = _mm256_setzero_si256();
    for (size_t k = 0; k < kp; k += 16) {
      const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + k));
      for (int r = 0; r < 8; ++r) s[r] = _mm256_add_epi32(s[r], _mm256_madd_epi16(av, wload(w0 + r * ldw + k)));
    }
    for (int r = 0; r < 8; ++r) acc[j + r] = hsum(s[r]);
  }
  for (; j + 4 <= n; j += 4) {
    const int8_t* w0 = w + j * ldw;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t k = 0; k < kp; k += 16) {
      const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + k));
      s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(av, wload(w0 + k)));
      s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(av, wload(w0 + ldw + k)));
      s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(av, wload(w0 + 2 * ldw + k)));
      s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(av, wload(w0 + 3 * ldw + k)));
    }
    acc[j] = hsum(s0);
    acc[j + 1] = hsum(s1);
    acc[j + 2] = hsum(s2);
    acc[j + 3] = hsum(s3);
  }
  for (; j < n; ++j) {
    __m256i s = _mm256_setzero_si256();
    for (size_t k = 0; k < kp; k += 16)
      s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + k)),
                                                wload(w + j * ldw + k)));
    acc[j] = hsum(s);
  }
}

}  // namespace lowbit
