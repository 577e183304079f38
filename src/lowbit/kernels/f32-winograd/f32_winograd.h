#pragma once
// Winograd F(2x2, 3x3) transforms for fp32 3x3 stride-1 convolution (design: README.md here).
//
// A 3x3 conv over a 4x4 input patch d gives a 2x2 output tile. Winograd computes it as
//   Y = A^T [ U (.) V ] A,   U = G g G^T (weights, 4x4, once at creation),   V = B^T d B (input, 4x4)
// so each tile costs 16 multiplies per (input, output) channel pair instead of 36; summed over
// input channels, the 16 element-wise products become 16 independent GEMMs (M x C) x (C x tiles),
// run on the fp32 GEMM micro-kernels. These functions are the transforms around those GEMMs; each
// ISA compiles the same loops (f32_winograd_inl.h) with its own flags.
#include <cstddef>
#include <cstdint>

namespace lowbit {

// A run of n consecutive tiles within one tile row: the tile at panel column j0 + i has its output
// pixels at rows oh, oh + 1 and columns ow + 2i, ow + 2i + 1, and its 4x4 input patch at the same
// (row, column) of the padded input plane.
struct F32WinogradSegment {
  int32_t oh, ow, j0, n;
};

// Input transform, in two steps per channel. First the padded plane (rows pw floats apart, readable
// 2 * half floats past the start of its last row) is split into even and odd columns:
//   eo[(2R) * half + x] = plane[R * pw + 2x],   eo[(2R + 1) * half + x] = plane[R * pw + 2x + 1]
// for each of `rows` rows and x < half (half a multiple of 16, at least tiles per row + 1 + 32).
using F32WinogradSplit = void (*)(const float* plane, size_t pw, size_t rows, size_t half, float* eo);
// Then per panel of nr tiles (nr = 8, 16 or 32), given as segments: V element xi = 4i + j of panel
// column c goes to dst[xi * ld + c]. Columns no segment covers get zeros.
using F32WinogradInput = void (*)(const float* eo, size_t half, const F32WinogradSegment* segs, size_t nsegs,
                                  size_t nr, float* dst, size_t ld);

// Output transform of one output channel's panel: element xi of panel column c at s[xi * ld + c].
// For each segment's tiles writes the 2x2 outputs that lie inside the oh_max x ow_max plane y:
//   y = min(max(A^T M A + bias + res, lo), hi)     (res optional, may alias y).
using F32WinogradOutput = void (*)(const float* s, size_t ld, size_t nr, const F32WinogradSegment* segs, size_t nsegs,
                                   float bias, const float* res, float* y, size_t oh_max, size_t ow_max, float lo,
                                   float hi);

// Each ISA's three functions (avx2.cc, avx512.cc, neon.cc; each defined only in builds for its
// architecture).
#define LOWBIT_F32_WINOGRAD_DECLARE(ISA)                                                                      \
  void f32_winograd_split__##ISA(const float* plane, size_t pw, size_t rows, size_t half, float* eo);         \
  void f32_winograd_input_2x2_3x3__##ISA(const float* eo, size_t half, const F32WinogradSegment* segs,        \
                                         size_t nsegs, size_t nr, float* dst, size_t ld);                      \
  void f32_winograd_output_2x2_3x3__##ISA(const float* s, size_t ld, size_t nr, const F32WinogradSegment* segs, \
                                          size_t nsegs, float bias, const float* res, float* y, size_t oh_max,  \
                                          size_t ow_max, float lo, float hi);
LOWBIT_F32_WINOGRAD_DECLARE(avx2)
LOWBIT_F32_WINOGRAD_DECLARE(avx512)
LOWBIT_F32_WINOGRAD_DECLARE(neon)
#undef LOWBIT_F32_WINOGRAD_DECLARE

// The weight transform U = G g G^T of one 3x3 kernel (row-major), in double: run once at creation.
void f32_winograd_weights_2x2_3x3(const float* g, float* u /* 16 values, xi = 4i + j */);

}  // namespace lowbit
