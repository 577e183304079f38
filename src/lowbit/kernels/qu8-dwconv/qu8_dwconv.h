#pragma once
// Depthwise qu8 convolution of one channel plane (MobileNet-style 3x3 stride 1/2, any kernel,
// stride and dilation), exact to the QConv contract (kernels/qu8-gemm/README.md).
//
// The plane is first widened to int16 (x - zp_x, padding 0) and split into SW column phases, so
// that every tap of every output row reads consecutive int16 values: padded column c lives at
// phase c % SW, index c / SW. Row r of phase f starts at x + r * SW * ld_phase + f * ld_phase.
#include <cstddef>
#include <cstdint>

#include "lowbit/kernels/qu8-gemm/qu8_gemm.h"

namespace lowbit {

struct Qu8DwGeometry {
  size_t KH, KW, SH, SW, DH, DW, OH, OW;
  size_t ld_phase;  // int16 values per phase row (>= ceil(PW / SW) + 16: vector reads past OW)
};

// One padded input row (W bytes at src, pad_left / pad_right zero columns) into its SW phase rows.
void qu8_dw_widen_row__avx2(const uint8_t* src, size_t W, size_t pad_left, size_t pad_right, size_t SW,
                            size_t ld_phase, uint8_t zp_x, int16_t* dst);

// y[oh][ow] = requantize(sum_t w[t] * x[tap t of (oh, ow)]) with e's row 0 constants (scale, bias,
// clamp, zp_y) and e.res the residual plane (OH x OW, row stride OW) or nullptr. wpairs: taps in
// kh-major order, two int16 per int32 word (an odd count padded with a zero tap).
void qu8_dwconv2d_chw__avx2(const int16_t* x, const Qu8DwGeometry& g, const int32_t* wpairs, uint8_t* y,
                            const Qu8GemmEpilogue& e);

}  // namespace lowbit
