#pragma once
// The F(2x2, 3x3) transform loops, compiled once per ISA by avx2.cc / avx512.cc / neon.cc (each
// wraps them in its own names). The arithmetic runs over a whole panel of NR tiles at a time, a
// compile-time trip count the vectoriser turns into full-width vectors with no scalar tail; the
// segments (runs of tiles in one tile row, as short as 7 on a 14x14 map) only gather and scatter.
#include <algorithm>
#include <cstddef>

#include "lowbit/kernels/f32-winograd/f32_winograd.h"

// Internal linkage: every ISA file compiles its own copy with its own flags, which the linker must
// never merge (an inline function of external linkage would be one copy for all ISAs).
namespace lowbit::winograd_inl {
namespace {

// Splits every row of a channel's padded plane into its even and odd columns:
// eo[(2R) * half + x] = plane[R * pw + 2x], eo[(2R + 1) * half + x] = plane[R * pw + 2x + 1], x < half
// (half a multiple of 16; the plane must be readable that far past its last row).
[[gnu::always_inline]] inline void deinterleave(const float* __restrict plane, size_t pw, size_t rows, size_t half,
                                                float* __restrict eo) {
  for (size_t r = 0; r < rows; ++r) {
    const float* __restrict src = plane + r * pw;
    float* __restrict e = eo + 2 * r * half;
    float* __restrict o = e + half;
    for (size_t x = 0; x < half; ++x) {
      e[x] = src[2 * x];
      o[x] = src[2 * x + 1];
    }
  }
}

// V = B^T d B with B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], for one panel of NR tiles.
// Patch element (r, k) of the tile at (oh, ow) is row oh + r's even (k = 0, 2) or odd (k = 1, 3)
// column ow / 2 + k / 2: a segment's tiles read it as one contiguous run of each of 16 arrays.
template <size_t NR>
[[gnu::always_inline]] inline void input_panel(const float* eo, size_t half, const F32WinogradSegment* segs,
                                               size_t nsegs, float* __restrict dst, size_t ld) {
  // d[4r + k][c]: patch element (r, k) of panel column c. Each segment copies a fixed NR floats
  // (full vectors, no tail); the next segment overwrites what spills past its n, and the row is
  // 2 NR wide for the last one's spill.
  alignas(64) float d[16][2 * NR];
  for (size_t s = 0; s < nsegs; ++s) {
    const F32WinogradSegment& g = segs[s];
    for (int r = 0; r < 4; ++r)
      for (int k = 0; k < 4; ++k) {
        const float* __restrict src = eo + (2 * (static_cast<size_t>(g.oh) + r) + (k & 1)) * half +
                                      static_cast<size_t>(g.ow) / 2 + (k >> 1);
        float* __restrict out = d[4 * r + k] + g.j0;
        for (size_t i = 0; i < NR; ++i) out[i] = src[i];
      }
  }
  // A last, partial panel: zero the columns past the tiles (no stale, possibly denormal values).
  const size_t covered = nsegs ? static_cast<size_t>(segs[nsegs - 1].j0 + segs[nsegs - 1].n) : 0;
  if (covered < NR)
    for (auto& v : d) std::fill(v + covered, v + NR, 0.0f);
  alignas(64) float w[16][NR];  // d B: w[4r + j][c]
  for (int r = 0; r < 4; ++r)
    for (size_t c = 0; c < NR; ++c) {
      const float d0 = d[4 * r][c], d1 = d[4 * r + 1][c], d2 = d[4 * r + 2][c], d3 = d[4 * r + 3][c];
      w[4 * r + 0][c] = d0 - d2;
      w[4 * r + 1][c] = d1 + d2;
      w[4 * r + 2][c] = d2 - d1;
      w[4 * r + 3][c] = d1 - d3;
    }
  for (int j = 0; j < 4; ++j) {
    float* __restrict v0 = dst + (0 + j) * ld;
    float* __restrict v1 = dst + (4 + j) * ld;
    float* __restrict v2 = dst + (8 + j) * ld;
    float* __restrict v3 = dst + (12 + j) * ld;
    for (size_t c = 0; c < NR; ++c) {
      const float w0 = w[j][c], w1 = w[4 + j][c], w2 = w[8 + j][c], w3 = w[12 + j][c];
      v0[c] = w0 - w2;
      v1[c] = w1 + w2;
      v2[c] = w2 - w1;
      v3[c] = w1 - w3;
    }
  }
}

// Y = A^T M A with A^T = [1 1 1 0; 0 1 -1 -1]; then bias, residual and clamp while scattering.
template <size_t NR>
[[gnu::always_inline]] inline void output_panel(const float* __restrict s, size_t ld, const F32WinogradSegment* segs,
                                                size_t nsegs, float bias, const float* res, float* y, size_t oh_max,
                                                size_t ow_max, float lo, float hi) {
  alignas(64) float q[8][NR];  // (M A)[i][b][c] at q[2i + b]
  for (int i = 0; i < 4; ++i) {
    const float* m0 = s + (4 * i + 0) * ld;
    const float* m1 = s + (4 * i + 1) * ld;
    const float* m2 = s + (4 * i + 2) * ld;
    const float* m3 = s + (4 * i + 3) * ld;
    for (size_t c = 0; c < NR; ++c) {
      q[2 * i][c] = m0[c] + m1[c] + m2[c];
      q[2 * i + 1][c] = m1[c] - m2[c] - m3[c];
    }
  }
  // The tiles' two output rows in image order: row[a][2c + b].
  alignas(64) float row[2][2 * NR];
  for (size_t c = 0; c < NR; ++c)
    for (int b = 0; b < 2; ++b) {
      row[0][2 * c + b] = q[b][c] + q[2 + b][c] + q[4 + b][c] + bias;
      row[1][2 * c + b] = q[2 + b][c] - q[4 + b][c] - q[6 + b][c] + bias;
    }
  // Element-wise from here: a residual aliasing the output is read before it is written.
  for (size_t si = 0; si < nsegs; ++si) {
    const F32WinogradSegment& g = segs[si];
    const size_t ncols = std::min<size_t>(2 * static_cast<size_t>(g.n), ow_max - static_cast<size_t>(g.ow));
    for (size_t a = 0; a < 2 && static_cast<size_t>(g.oh) + a < oh_max; ++a) {
      const size_t o = (static_cast<size_t>(g.oh) + a) * ow_max + static_cast<size_t>(g.ow);
      const float* v = row[a] + 2 * static_cast<size_t>(g.j0);
      float* yo = y + o;
      if (res) {
        const float* r = res + o;
        for (size_t c = 0; c < ncols; ++c) yo[c] = std::min(std::max(v[c] + r[c], lo), hi);
      } else {
        for (size_t c = 0; c < ncols; ++c) yo[c] = std::min(std::max(v[c], lo), hi);
      }
    }
  }
}

inline void input_2x2_3x3(const float* eo, size_t half, const F32WinogradSegment* segs, size_t nsegs, size_t nr,
                          float* dst, size_t ld) {
  switch (nr) {
    case 8: input_panel<8>(eo, half, segs, nsegs, dst, ld); break;
    case 16: input_panel<16>(eo, half, segs, nsegs, dst, ld); break;
    default: input_panel<32>(eo, half, segs, nsegs, dst, ld); break;
  }
}

inline void output_2x2_3x3(const float* s, size_t ld, size_t nr, const F32WinogradSegment* segs, size_t nsegs,
                           float bias, const float* res, float* y, size_t oh_max, size_t ow_max, float lo, float hi) {
  switch (nr) {
    case 8: output_panel<8>(s, ld, segs, nsegs, bias, res, y, oh_max, ow_max, lo, hi); break;
    case 16: output_panel<16>(s, ld, segs, nsegs, bias, res, y, oh_max, ow_max, lo, hi); break;
    default: output_panel<32>(s, ld, segs, nsegs, bias, res, y, oh_max, ow_max, lo, hi); break;
  }
}

}  // namespace
}  // namespace lowbit::winograd_inl
