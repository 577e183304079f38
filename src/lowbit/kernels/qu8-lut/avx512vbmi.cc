#include <immintrin.h>

#include "lowbit/kernels/qu8-lut/qu8_lut.h"

namespace lowbit {

// 64 codes at a time: vpermi2b looks up the low 7 bits of every byte in two 64-byte halves of
// the table at once (entries 0-127 in t0:t1, 128-255 in t2:t3), and the byte's top bit picks
// between the two results. Two permutes, a mask move and a blend per 64 bytes against a cycle a
// byte for the scalar loop; the tail goes through the same path with masked loads and stores.
void qu8_lut__avx512vbmi(size_t n, const uint8_t* x, uint8_t* y, const uint8_t* table) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  auto lookup = [&](__m512i v) {
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);
    const __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi);
  };
  size_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(y + i, lookup(_mm512_loadu_si512(x + i)));
  if (i < n) {
    const __mmask64 m = _cvtu64_mask64(~uint64_t{0} >> (64 - (n - i)));
    _mm512_mask_storeu_epi8(y + i, m, lookup(_mm512_maskz_loadu_epi8(m, x + i)));
  }
}

}  // namespace lowbit
