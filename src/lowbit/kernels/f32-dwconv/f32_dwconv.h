#pragma once
// Depthwise (one filter per channel) fp32 convolution of one CHW plane.
#include <cstddef>

namespace lowbit {

struct F32DwconvGeometry {
  size_t KH, KW, SH, SW, DH, DW;
  size_t OH, OW;
};

// x: the input plane already padded (row stride ld_x), readable for 16 * SW + 16 floats past the
// last row (vector tails over-read there). w: KH*KW taps. res: residual plane (OH x OW) or nullptr.
// y[oh][ow] = clamp(bias + res + sum w[kh][kw] * x[oh*SH + kh*DH][ow*SW + kw*DW], min, max).
void f32_dwconv2d_chw__avx2(const float* x, size_t ld_x, const F32DwconvGeometry& g, const float* w, float bias,
                            const float* res, float* y, float min, float max);

}  // namespace lowbit
