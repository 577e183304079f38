// AVX2 depthwise qu8 conv: 16 output pixels per step; two taps at a time are interleaved
// (vpunpcklwd / vpunpckhwd) so that one vpmaddwd forms w0*x0 + w1*x1 in int32, exact as in the
// GEMM kernels. Epilogue shared with them (qu8_ukernel_inl.h).
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the shared helpers use its intrinsics.
#include "lowbit/kernels/qu8-dwconv/qu8_dwconv.h"
#include "lowbit/kernels/qu8-gemm/qu8_ukernel_inl.h"

namespace lowbit {

void qu8_dw_widen_row__avx2(const uint8_t* src, size_t W, size_t pad_left, size_t pad_right, size_t SW,
                            size_t ld_phase, uint8_t zp_x, int16_t* dst) {
  const size_t PW = pad_left + W + pad_right;
  if (SW == 1) {
    std::memset(dst, 0, pad_left * sizeof(int16_t));
    const __m256i zp = _mm256_set1_epi16(zp_x);
    size_t i = 0;
    for (; i + 16 <= W; i += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + pad_left + i),
                          _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))), zp));
    for (; i < W; ++i) dst[pad_left + i] = static_cast<int16_t>(int32_t{src[i]} - zp_x);
    std::memset(dst + pad_left + W, 0, (ld_phase - pad_left - W) * sizeof(int16_t));
    return;
  }
  for (size_t f = 0; f < SW; ++f) {
    int16_t* row = dst + f * ld_phase;
    size_t idx = 0;
    for (size_t c = f; c < PW; c += SW, ++idx)
      row[idx] = c >= pad_left && c < pad_left + W ? static_cast<int16_t>(int32_t{src[c - pad_left]} - zp_x) : 0;
    std::memset(row + idx, 0, (ld_phase - idx) * sizeof(int16_t));
  }
}

void qu8_dwconv2d_chw__avx2(const int16_t* x, const Qu8DwGeometry& g, const int32_t* wpairs, uint8_t* y,
                            const Qu8GemmEpilogue& e) {
  const size_t taps = g.KH * g.KW, npairs = (taps + 1) / 2, ld_row = g.SW * g.ld_phase;
  // Offset of each tap from the start of output row 0's window, in int16 values.
  size_t off[64];
  for (size_t t = 0; t < npairs * 2; ++t) {
    const size_t tt = t < taps ? t : t - 1;  // the zero-weight padding tap reads a valid address
    const size_t kh = tt / g.KW, kw = tt % g.KW;
    off[t] = kh * g.DH * ld_row + ((kw * g.DW) % g.SW) * g.ld_phase + (kw * g.DW) / g.SW;
  }
  LOWBIT_KERNEL_NS::YmmRequant ep(e);
  for (size_t oh = 0; oh < g.OH; ++oh) {
    const int16_t* xr = x + oh * g.SH * ld_row;
    for (size_t j0 = 0; j0 < g.OW; j0 += 16) {
      __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();  // pixels [0-3, 8-11], [4-7, 12-15]
      for (size_t t = 0; t < npairs; ++t) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr + off[2 * t] + j0));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr + off[2 * t + 1] + j0));
        const __m256i w = _mm256_set1_epi32(wpairs[t]);
        lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b), w));
        hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b), w));
      }
      const __m256i acc[2] = {_mm256_permute2x128_si256(lo, hi, 0x20), _mm256_permute2x128_si256(lo, hi, 0x31)};
      ep.res = e.res ? e.res + oh * g.OW + j0 : nullptr;
      const size_t nc = g.OW - j0 < 16 ? g.OW - j0 : 16;
      LOWBIT_KERNEL_NS::requant_store_row<16>(acc, nc, 0, y + oh * g.OW + j0, ep);
    }
  }
}

}  // namespace lowbit
