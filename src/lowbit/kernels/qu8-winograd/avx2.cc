// Integer F(2x2, 3x3) transforms for the AVX2 int16 path (qu8_winograd.h). The arithmetic runs
// over a whole panel at a time (compile-time trip counts, full vectors); segments only gather and
// scatter. The requantization is the micro-kernels' own epilogue code (qu8_ukernel_inl.h).
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the shared helpers use its intrinsics.
#include "lowbit/kernels/qu8-gemm/qu8_ukernel_inl.h"
#include "lowbit/kernels/qu8-winograd/qu8_winograd.h"

#include <algorithm>

namespace LOWBIT_KERNEL_NS {
namespace {

using ::lowbit::F32WinogradSegment;
using ::lowbit::Qu8GemmEpilogue;

// V = B^T d B of one channel's panel into v[xi][c] (B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]):
// |d| <= 255 grows at most 4x, so int16 holds every step.
template <size_t NR>
void input_panel(const int16_t* eo, size_t half, const F32WinogradSegment* segs, size_t nsegs, int16_t (&v)[16][NR]) {
  alignas(32) int16_t d[16][2 * NR];  // patch element (r, k) of column c; segments spill, the next overwrites
  for (size_t s = 0; s < nsegs; ++s) {
    const F32WinogradSegment& g = segs[s];
    for (int r = 0; r < 4; ++r)
      for (int k = 0; k < 4; ++k) {
        const int16_t* src = eo + (2 * (static_cast<size_t>(g.oh) + r) + (k & 1)) * half +
                             static_cast<size_t>(g.ow) / 2 + (k >> 1);
        int16_t* out = d[4 * r + k] + g.j0;
        for (size_t i = 0; i < NR; ++i) out[i] = src[i];
      }
  }
  const size_t covered = nsegs ? static_cast<size_t>(segs[nsegs - 1].j0 + segs[nsegs - 1].n) : 0;
  if (covered < NR)
    for (auto& row : d) std::fill(row + covered, row + NR, int16_t{0});
  alignas(32) int16_t w[16][NR];
  for (int r = 0; r < 4; ++r)
    for (size_t c = 0; c < NR; ++c) {
      const int16_t d0 = d[4 * r][c], d1 = d[4 * r + 1][c], d2 = d[4 * r + 2][c], d3 = d[4 * r + 3][c];
      w[4 * r + 0][c] = static_cast<int16_t>(d0 - d2);
      w[4 * r + 1][c] = static_cast<int16_t>(d1 + d2);
      w[4 * r + 2][c] = static_cast<int16_t>(d2 - d1);
      w[4 * r + 3][c] = static_cast<int16_t>(d1 - d3);
    }
  for (int j = 0; j < 4; ++j)
    for (size_t c = 0; c < NR; ++c) {
      const int16_t w0 = w[j][c], w1 = w[4 + j][c], w2 = w[8 + j][c], w3 = w[12 + j][c];
      v[0 + j][c] = static_cast<int16_t>(w0 - w2);
      v[4 + j][c] = static_cast<int16_t>(w1 + w2);
      v[8 + j][c] = static_cast<int16_t>(w2 - w1);
      v[12 + j][c] = static_cast<int16_t>(w1 - w3);
    }
}

template <size_t NR>
void input_pair(const int16_t* eo0, const int16_t* eo1, size_t half, const F32WinogradSegment* segs, size_t nsegs,
                int16_t* dst, size_t ld) {
  alignas(32) int16_t v0[16][NR], v1[16][NR];
  input_panel<NR>(eo0, half, segs, nsegs, v0);
  if (eo1)
    input_panel<NR>(eo1, half, segs, nsegs, v1);
  else
    for (auto& row : v1) std::fill(row, row + NR, int16_t{0});
  // Interleave the pair: tile j's two channels are one int32 word (the k pair of vpmaddwd).
  for (int xi = 0; xi < 16; ++xi) {
    __m256i* out = reinterpret_cast<__m256i*>(dst + xi * ld);
    for (size_t c = 0; c < NR; c += 16) {
      const __m256i a = NR == 8 ? _mm256_castsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(v0[xi] + c)))
                                : _mm256_load_si256(reinterpret_cast<const __m256i*>(v0[xi] + c));
      const __m256i b = NR == 8 ? _mm256_castsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(v1[xi] + c)))
                                : _mm256_load_si256(reinterpret_cast<const __m256i*>(v1[xi] + c));
      // unpack works per 128-bit lane: lo = tiles 0-3 | 8-11, hi = 4-7 | 12-15.
      const __m256i lo = _mm256_unpacklo_epi16(a, b), hi = _mm256_unpackhi_epi16(a, b);
      if constexpr (NR == 8) {
        _mm256_store_si256(out, _mm256_permute2x128_si256(lo, hi, 0x20));
      } else {
        _mm256_store_si256(out++, _mm256_permute2x128_si256(lo, hi, 0x20));
        _mm256_store_si256(out++, _mm256_permute2x128_si256(lo, hi, 0x31));
      }
    }
  }
}

// Y' = A^T M A (A^T = [1 1 1 0; 0 1 -1 -1]) in wrap-around 32-bit arithmetic: the true value
// 4 * acc fits int32 (the driver bounds C), so Y' is exact and acc = Y' >> 2.
template <size_t NR>
void output_panel(const int32_t* s, size_t ld, const F32WinogradSegment* segs, size_t nsegs, const Qu8GemmEpilogue& e,
                  uint8_t* y, size_t oh_max, size_t ow_max) {
  alignas(32) uint32_t q[8][NR];
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
  alignas(32) int32_t row[2][2 * NR + 8];  // image order, 8 words of slack for the last vector
  for (size_t c = 0; c < NR; ++c)
    for (int b = 0; b < 2; ++b) {
      row[0][2 * c + b] = static_cast<int32_t>(q[b][c] + q[2 + b][c] + q[4 + b][c]) >> 2;
      row[1][2 * c + b] = static_cast<int32_t>(q[2 + b][c] - q[4 + b][c] - q[6 + b][c]) >> 2;
    }
  YmmRequant rq(e);  // one row at a time: row 0 of the contract, residual at this row's pixels
  for (size_t si = 0; si < nsegs; ++si) {
    const F32WinogradSegment& g = segs[si];
    const size_t ncols = std::min<size_t>(2 * static_cast<size_t>(g.n), ow_max - static_cast<size_t>(g.ow));
    for (size_t a = 0; a < 2 && static_cast<size_t>(g.oh) + a < oh_max; ++a) {
      const size_t o = (static_cast<size_t>(g.oh) + a) * ow_max + static_cast<size_t>(g.ow);
      const int32_t* acc = row[a] + 2 * static_cast<size_t>(g.j0);
      for (size_t c0 = 0; c0 < ncols; c0 += 8) {
        const __m256i v[1] = {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + c0))};
        rq.res = e.res ? e.res + o + c0 : nullptr;
        requant_store_row<8>(v, std::min<size_t>(8, ncols - c0), 0, y + o + c0, rq);
      }
    }
  }
}

}  // namespace
}  // namespace LOWBIT_KERNEL_NS

namespace lowbit {

void qu8_winograd_split__avx2(const uint8_t* plane, size_t pw, size_t rows, size_t half, uint8_t zp, int16_t* eo) {
  const int16_t z = zp;
  for (size_t r = 0; r < rows; ++r) {
    const uint8_t* __restrict src = plane + r * pw;
    int16_t* __restrict e = eo + 2 * r * half;
    int16_t* __restrict o = e + half;
    for (size_t x = 0; x < half; ++x) {
      e[x] = static_cast<int16_t>(src[2 * x] - z);
      o[x] = static_cast<int16_t>(src[2 * x + 1] - z);
    }
  }
}

void qu8_winograd_input_2x2_3x3__avx2(const int16_t* eo0, const int16_t* eo1, size_t half,
                                      const F32WinogradSegment* segs, size_t nsegs, size_t nr, int16_t* dst,
                                      size_t ld) {
  if (nr == 8)
    LOWBIT_KERNEL_NS::input_pair<8>(eo0, eo1, half, segs, nsegs, dst, ld);
  else
    LOWBIT_KERNEL_NS::input_pair<16>(eo0, eo1, half, segs, nsegs, dst, ld);
}

void qu8_winograd_output_2x2_3x3__avx2(const int32_t* s, size_t ld, size_t nr, const F32WinogradSegment* segs,
                                       size_t nsegs, const Qu8GemmEpilogue& e, uint8_t* y, size_t oh_max,
                                       size_t ow_max) {
  if (nr == 8)
    LOWBIT_KERNEL_NS::output_panel<8>(s, ld, segs, nsegs, e, y, oh_max, ow_max);
  else
    LOWBIT_KERNEL_NS::output_panel<16>(s, ld, segs, nsegs, e, y, oh_max, ow_max);
}

}  // namespace lowbit
