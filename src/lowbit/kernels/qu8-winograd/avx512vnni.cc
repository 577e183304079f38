// The transforms of the exact Winograd F(2x2, 3x3) for narrow codes on the AVX-512 VNNI
// micro-kernels (qu8_winograd.h): the input transform in int8 a tile row at a time into u8 quads,
// and the output transform as the AVX2 output_panel (avx2.cc) 16 lanes at a time with the VNNI
// kernels' own zmm requantization. With C = 64 input channels the GEMMs are short, and on ymm the
// transforms took as long as the GEMMs.
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers (avx512vnni.cc)
#endif
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the shared helpers use its intrinsics.
#include "lowbit/kernels/qu8-gemm/qu8_ukernel_inl.h"
#include "lowbit/kernels/qu8-gemm/qu8_zmm_inl.h"
#include "lowbit/kernels/qu8-winograd/qu8_winograd.h"

#include <algorithm>
#include <cstring>

namespace LOWBIT_KERNEL_NS {
namespace {

using ::lowbit::F32WinogradSegment;
using ::lowbit::Qu8GemmEpilogue;

// The input transform into the VNNI tiles' u8 quads, 32 tiles of a tile row per pass. |x - zp| <=
// 15, so every step of V = B^T d B fits int8 (|V| <= 60) and runs on bytes. Viewed as 16-bit words,
// a row's columns are W[k] = (e, o) = (x[2k], x[2k + 1]), and tile k's horizontal combinations of
// a vertically combined row t are
//   V0 = e_k - e_k+1,  V1 = o_k + e_k+1,  V2 = e_k+1 - o_k,  V3 = o_k - o_k+1
// so with A = W[k..] and B = W[k+1..] (the same row two bytes on): D = A - B holds V0 (low byte)
// and V3 (high byte); with S = A's bytes swapped, S + B holds V1 and B - S V2 in their low bytes.
// No shuffle across words until the four channels are interleaved into quads.
inline __m512i swap_bytes16(__m512i a) { return _mm512_or_si512(_mm512_slli_epi16(a, 8), _mm512_srli_epi16(a, 8)); }

void input_row_u8x4(const uint8_t* const planes[4], size_t pw, uint8_t zp, size_t th, size_t tiles, uint8_t* out,
                    size_t ld) {
  const __m512i z = _mm512_set1_epi8(static_cast<char>(zp)), off = _mm512_set1_epi8(64);
  const __m512i lo8 = _mm512_set1_epi16(0x00FF), hi8 = _mm512_set1_epi16(static_cast<short>(0xFF00));
  // A padding channel: V + 64 = 0 in every byte.
  const __m512i pad = _mm512_set1_epi8(-64);
  // 128-bit blocks of the unpacked quads back in tile order.
  const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  for (size_t t0 = 0; t0 < tiles; t0 += 32) {
    for (int i = 0; i < 4; ++i) {
      // Vertical row combination i: t = d0 - d2, d1 + d2, d2 - d1, d1 - d3.
      constexpr int ra[4] = {0, 1, 2, 1}, rb[4] = {2, 2, 1, 3};
      constexpr int sign[4] = {-1, 1, -1, -1};
      __m512i v[4][3];  // per channel: D (V0 low, V3 high), V1, V2 (low bytes)
      for (int c = 0; c < 4; ++c) {
        if (!planes[c]) {
          v[c][0] = v[c][1] = v[c][2] = pad;
          continue;
        }
        const uint8_t* p = planes[c] + 2 * th * pw + 2 * t0;
        auto row = [&](int r, size_t shift) {
          return _mm512_sub_epi8(_mm512_loadu_si512(p + static_cast<size_t>(r) * pw + shift), z);
        };
        auto combine = [&](__m512i x, __m512i y) { return sign[i] > 0 ? _mm512_add_epi8(x, y) : _mm512_sub_epi8(x, y); };
        const __m512i a = combine(row(ra[i], 0), row(rb[i], 0)), b = combine(row(ra[i], 2), row(rb[i], 2));
        const __m512i sw = swap_bytes16(a);
        v[c][0] = _mm512_sub_epi8(a, b);
        v[c][1] = _mm512_add_epi8(sw, b);
        v[c][2] = _mm512_sub_epi8(b, sw);
      }
      for (int j = 0; j < 4; ++j) {
        // Channel pairs as words (the value byte of each), then the pairs as quads.
        __m512i w[2];
        for (int h = 0; h < 2; ++h) {
          const __m512i x0 = v[2 * h][j == 3 ? 0 : j], x1 = v[2 * h + 1][j == 3 ? 0 : j];
          w[h] = j == 3 ? _mm512_or_si512(_mm512_srli_epi16(x0, 8), _mm512_and_si512(x1, hi8))
                        : _mm512_or_si512(_mm512_and_si512(x0, lo8), _mm512_slli_epi16(x1, 8));
        }
        const __m512i u0 = _mm512_unpacklo_epi16(w[0], w[1]), u1 = _mm512_unpackhi_epi16(w[0], w[1]);
        uint8_t* o = out + (4 * i + j) * ld + 4 * t0;
        _mm512_storeu_si512(o, _mm512_add_epi8(_mm512_permutex2var_epi64(u0, first, u1), off));
        _mm512_storeu_si512(o + 64, _mm512_add_epi8(_mm512_permutex2var_epi64(u0, second, u1), off));
      }
    }
  }
}

// Y' = A^T M A (A^T = [1 1 1 0; 0 1 -1 -1]) in wrap-around 32-bit arithmetic; the true value is
// 4 * acc, within int32 (the driver's check), so acc = Y' >> 2 exactly.
template <size_t NR>
void output_panel_zmm(const int32_t* s, size_t ld, const F32WinogradSegment* segs, size_t nsegs,
                      const Qu8GemmEpilogue& e, uint8_t* y, size_t oh_max, size_t ow_max) {
  alignas(64) uint32_t q[8][NR];
  for (int i = 0; i < 4; ++i) {
    const uint32_t* m0 = reinterpret_cast<const uint32_t*>(s + (4 * i + 0) * ld);
    const uint32_t* m1 = reinterpret_cast<const uint32_t*>(s + (4 * i + 1) * ld);
    const uint32_t* m2 = reinterpret_cast<const uint32_t*>(s + (4 * i + 2) * ld);
    const uint32_t* m3 = reinterpret_cast<const uint32_t*>(s + (4 * i + 3) * ld);
    for (size_t c = 0; c < NR; ++c) {
      q[2 * i][c] = m0[c] + m1[c] + m2[c];
      q[2 * i + 1][c] = m1[c] - m2[c] - m3[c];
    }
  }
  alignas(64) int32_t row[2][2 * NR + 16];  // image order, a vector of slack
  for (size_t c = 0; c < NR; ++c)
    for (int b = 0; b < 2; ++b) {
      row[0][2 * c + b] = static_cast<int32_t>(q[b][c] + q[2 + b][c] + q[4 + b][c]) >> 2;
      row[1][2 * c + b] = static_cast<int32_t>(q[2 + b][c] - q[4 + b][c] - q[6 + b][c]) >> 2;
    }
  const ZmmRequant rq(e);  // row 0 of the contract: this channel's scale, bias and residual plane
  for (size_t si = 0; si < nsegs; ++si) {
    const F32WinogradSegment& g = segs[si];
    const size_t ncols = std::min<size_t>(2 * static_cast<size_t>(g.n), ow_max - static_cast<size_t>(g.ow));
    for (size_t a = 0; a < 2 && static_cast<size_t>(g.oh) + a < oh_max; ++a) {
      const size_t o = (static_cast<size_t>(g.oh) + a) * ow_max + static_cast<size_t>(g.ow);
      const int32_t* acc = row[a] + 2 * static_cast<size_t>(g.j0);
      for (size_t c0 = 0; c0 < ncols; c0 += 16) {
        ZmmRequant at = rq;
        at.res = e.res ? e.res + o + c0 : nullptr;
        requant_store_row_zmm(_mm512_loadu_si512(acc + c0), std::min<size_t>(16, ncols - c0), 0, y + o + c0, at);
      }
    }
  }
}

void qu8_winograd_input_u8x4_2x2_3x3__avx512vnni(const uint8_t* const planes[4], size_t pw, uint8_t zp, size_t th,
                                                 size_t tiles, uint8_t* out, size_t ld) {
  input_row_u8x4(planes, pw, zp, th, tiles, out, ld);
}

void qu8_winograd_output_2x2_3x3__avx512vnni(const int32_t* s, size_t ld, size_t nr, const F32WinogradSegment* segs,
                                             size_t nsegs, const Qu8GemmEpilogue& e, uint8_t* y, size_t oh_max,
                                             size_t ow_max) {
  if (nr == 8)
    output_panel_zmm<8>(s, ld, segs, nsegs, e, y, oh_max, ow_max);
  else
    output_panel_zmm<16>(s, ld, segs, nsegs, e, y, oh_max, ow_max);
}

}  // namespace

const ::lowbit::Qu8WinogradU8x4Kernels& qu8_winograd_u8x4_avx512vnni() {
  static const ::lowbit::Qu8WinogradU8x4Kernels k = {&qu8_gemm_kernels_avx512vnni(),
                                                     qu8_winograd_input_u8x4_2x2_3x3__avx512vnni,
                                                     qu8_winograd_output_2x2_3x3__avx512vnni};
  return k;
}

}  // namespace LOWBIT_KERNEL_NS
