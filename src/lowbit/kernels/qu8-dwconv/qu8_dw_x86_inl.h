#pragma once
// x86 pieces of the qu8 depthwise family (qu8_dwconv_inl.h): the word planes and the ymm traits.
// Included after x86_simd.h by the ISA files, each compiling its own copy with its own flags (all
// have AVX2).
#include "lowbit/kernels/qu8-dwconv/qu8_dwconv_inl.h"
#include "lowbit/kernels/qu8-gemm/qu8_ukernel_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

// words[i] = (v[i] - zp) | (v[i + 1] - zp) << 16 as int16 halves, 16 words per step.
inline void qu8_dw_words_pairs_avx2(const uint8_t* v, size_t n, uint8_t zp_x, int32_t* words) {
  const __m256i zp = _mm256_set1_epi16(zp_x);
  for (size_t i = 0; i < n; i += 16) {
    const __m256i a = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i))), zp);
    const __m256i b = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i + 1))), zp);
    const __m256i lo = _mm256_unpacklo_epi16(a, b), hi = _mm256_unpackhi_epi16(a, b);  // words 0-3 8-11 | 4-7 12-15
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(words + i), _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(words + i + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
  }
}

// Stride 2: words[i] = (v[2i] - zp) | (v[2i + 1] - zp) << 16, which is the widened values
// themselves read as int32.
inline void qu8_dw_words_pairs_s2_avx2(const uint8_t* v, size_t n, uint8_t zp_x, int32_t* words) {
  const __m256i zp = _mm256_set1_epi16(zp_x);
  for (size_t i = 0; i < n; i += 8)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(words + i),
                        _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 2 * i))), zp));
}

// words[i] = v[i .. i + 3] ^ shift (bytes), 8 words per vpshufb: each 128-bit lane holds the 16
// bytes from its first word on and takes 4 overlapping windows of 4.
inline void qu8_dw_words_quads_avx2(const uint8_t* v, size_t n, uint8_t shift, int32_t* words) {
  const __m256i win = _mm256_setr_epi8(0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6,  //
                                       0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6);
  const __m256i sh = _mm256_set1_epi8(static_cast<char>(shift));
  for (size_t i = 0; i < n; i += 8) {
    const __m256i b = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i + 4)), 1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(words + i), _mm256_xor_si256(_mm256_shuffle_epi8(b, win), sh));
  }
}

// Stride 2: words[i] = v[2i .. 2i + 3] ^ shift, 4 windows per 128-bit lane (lane 1 from v + 8).
inline void qu8_dw_words_quads_s2_avx2(const uint8_t* v, size_t n, uint8_t shift, int32_t* words) {
  const __m256i win = _mm256_setr_epi8(0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7, 8, 9,  //
                                       0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7, 8, 9);
  const __m256i sh = _mm256_set1_epi8(static_cast<char>(shift));
  for (size_t i = 0; i < n; i += 8) {
    const uint8_t* b0 = v + 2 * i;
    const __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0))),
                                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + 8)), 1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(words + i), _mm256_xor_si256(_mm256_shuffle_epi8(b, win), sh));
  }
}

// 16 outputs as two ymm of 8 int32, requantized by requant_store_row<16>.
struct YmmDwBase {
  using Wv = __m256i;
  struct Acc {
    __m256i v[2];
  };
  struct Requant : YmmRequant {
    explicit Requant(const ::lowbit::Qu8GemmEpilogue& e) : YmmRequant(e) {}
  };
  static Wv bcast(int32_t w) { return _mm256_set1_epi32(w); }
  static Acc init(int32_t i) { return {{_mm256_set1_epi32(i), _mm256_set1_epi32(i)}}; }
  static void store(const Acc& acc, Requant& rq, const uint8_t* res, uint8_t* out) {
    rq.res = res;
    requant_store_row<16>(acc.v, 16, 0, out, rq);
  }
};

}  // namespace
}  // namespace LOWBIT_KERNEL_NS
