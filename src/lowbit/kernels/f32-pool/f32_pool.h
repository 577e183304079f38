#pragma once
// fp32 pooling of CHW planes.
#include <cstddef>

namespace lowbit {

struct F32PoolGeometry {
  size_t KH, KW, SH, SW, DH, DW;
  size_t OH, OW;
};

// x: one plane already padded (row stride ld_x) with -inf (max) or 0 (average) and covering every
// window, readable for 16 * SW + 16 floats past its last row.
void f32_maxpool2d_chw__avx2(const float* x, size_t ld_x, const F32PoolGeometry& g, float* y);
// y[oh][ow] = sum of the window * inv_h[oh] * inv_w[ow] (reciprocal window counts; inv_w readable
// up to a multiple of 8).
void f32_avgpool2d_chw__avx2(const float* x, size_t ld_x, const F32PoolGeometry& g, const float* inv_h,
                             const float* inv_w, float* y);
// y[c] = mean of x[c * n .. c * n + n) for c < channels.
void f32_global_avgpool__avx2(const float* x, size_t n, size_t channels, float* y);

}  // namespace lowbit
