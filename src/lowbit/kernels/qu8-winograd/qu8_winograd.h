#pragma once
// Exact integer Winograd F(2x2, 3x3) for the int8 3x3 stride-1 QConv on int16 multiply-add
// kernels (design and the exactness argument: README.md here).
//
// With G' = 2G (integer), U' = G' w G'^T = 4 U, and V = B^T (x - zp_x) B, the integer identity
//   A^T [ sum_c U'_c (.) V_c ] A = 4 * sum_c sum_taps w (x - zp_x) = 4 * acc
// holds exactly; |V| <= 4 * 255 = 1020 and |U'| <= 9 * 128 = 1152 fit int16, so the 16 Winograd
// GEMMs run on the AVX2 qu8 micro-kernels (vpmaddwd, int32 wrap-around sums), and acc comes out as
// the same integer the direct kernels compute: the requantized bytes are identical.
#include <cstddef>
#include <cstdint>

#include "lowbit/kernels/f32-winograd/f32_winograd.h"  // F32WinogradSegment: the same tile runs
#include "lowbit/kernels/qu8-gemm/qu8_gemm.h"

namespace lowbit {

// Even/odd column split of a channel's zp-padded u8 plane, widened with the zero point removed:
//   eo[(2R) * half + x] = plane[R * pw + 2x] - zp,   eo[(2R + 1) * half + x] = plane[R * pw + 2x + 1] - zp
// (half a multiple of 16, at least tiles per row + 1 + 16; the plane readable 2 * half bytes past
// the start of its last row).
void qu8_winograd_split__avx2(const uint8_t* plane, size_t pw, size_t rows, size_t half, uint8_t zp, int16_t* eo);

// V = B^T d B of a channel pair's panel of nr tiles (nr = 8 or 16) in the widened B layout of the
// micro-kernels: element xi of tile j of channel 2g + i at dst[xi * ld + 2j + i] (dst points at
// the pair's group; ld in int16). eo1 == nullptr: the second channel is padding (zeros).
void qu8_winograd_input_2x2_3x3__avx2(const int16_t* eo0, const int16_t* eo1, size_t half,
                                      const F32WinogradSegment* segs, size_t nsegs, size_t nr, int16_t* dst, size_t ld);

// Output transform of one output channel's panel: the int32 sums of element xi of tile j at
// s[xi * ld + j]; acc = (A^T M A) / 4, requantized by the int8 contract (e: this channel's scale
// and bias at e.scale[0] / e.bias[0], e.res the channel's residual plane or null) into the
// oh_max x ow_max u8 plane y, for the segments' tiles.
void qu8_winograd_output_2x2_3x3__avx2(const int32_t* s, size_t ld, size_t nr, const F32WinogradSegment* segs,
                                       size_t nsegs, const Qu8GemmEpilogue& e, uint8_t* y, size_t oh_max,
                                       size_t ow_max);

// U' = G' w G'^T (G' = [2 0 0; 1 1 1; 1 -1 1; 0 0 2]) of one 3x3 int8 kernel, exact.
void qu8_winograd_weights_2x2_3x3(const int8_t* w, int16_t* u /* 16 values, xi = 4i + j */);

// The narrow-code flavour (4- / 2-bit activations and weights) on the AVX-512 VNNI micro-kernels:
// |U'| <= 9 * 14 fits s8 and V + 64 (|V| <= 4 * 15) fits u8, so the 16 GEMMs run on vpdpbusd, and
// the accumulators start at -64 * sum_c U' (the driver's row_init) to remove the offset exactly.
// Its transforms and tiles, as one set (tests/simde builds it emulated):
struct Qu8WinogradU8x4Kernels {
  const Qu8GemmKernels* gemm;
  // V + 64 of tile row th of four channels' zp-padded u8 planes (rows pw bytes apart; planes[i] ==
  // nullptr: a padding channel, whose V + 64 is 0) into out[xi * ld + 4 tw + i] for tw < tiles:
  // |x - zp_x| <= 15, so the transform runs on bytes. Writes whole passes of 32 tiles (out has
  // room for tiles rounded up to 32) and reads 66 bytes past each pass's first column.
  void (*input)(const uint8_t* const planes[4], size_t pw, uint8_t zp, size_t th, size_t tiles, uint8_t* out,
                size_t ld);
  // The output transform, as qu8_winograd_output_2x2_3x3__avx2.
  void (*output)(const int32_t* s, size_t ld, size_t nr, const F32WinogradSegment* segs, size_t nsegs,
                 const Qu8GemmEpilogue& e, uint8_t* y, size_t oh_max, size_t ow_max);
};

}  // namespace lowbit

namespace LOWBIT_KERNEL_NS {
const ::lowbit::Qu8WinogradU8x4Kernels& qu8_winograd_u8x4_avx512vnni();
}  // namespace LOWBIT_KERNEL_NS
