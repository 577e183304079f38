#pragma once
// fp32 pooling of CHW planes.
#include <cstddef>

#ifndef LOWBIT_KERNEL_NS
#define LOWBIT_KERNEL_NS lowbit
#endif

namespace lowbit {

// One plane's pooling: the input plane (H x W, unpadded), its pads before, the window and the output.
struct F32PoolGeometry {
  size_t H, W, pad_top, pad_left;
  size_t KH, KW, SH, SW, DH, DW;
  size_t OH, OW;
};

// Floats of one of the two row buffers the kernels need (per thread, 2 * this): the padded row
// (every window's columns, ceil_mode overhang included) and the widest vector over-read past it
// (two vectors of 16 per stride step, from the last output vector's last tap).
inline size_t f32_pool_row_floats(const F32PoolGeometry& g) {
  const size_t padded = g.pad_left + g.W, windows = (g.OW - 1) * g.SW + (g.KW - 1) * g.DW + 1;
  return (padded > windows ? padded : windows) + 32 * g.SW + 32;
}

// One ISA's pooling of one plane, written once (f32_pool_inl.h) over its vector traits. Max and sum
// are separable, so each output row is two passes: the KH input rows of its windows that lie inside
// the image reduced column by column into a row of `row` (2 * f32_pool_row_floats; the pads and the ceil_mode
// overhang hold the identity, -inf or 0), then KW taps of stride SW along that row, `lanes` output
// pixels per vector (stride 1 loads directly, stride 2 deinterleaves two loads, other strides gather
// lane by lane). KH + KW vector steps per output vector instead of KH * KW, and no padded copy of
// the plane. SqueezeNet's three 3x3/2 pools (64 x 111 x 111 to 256 x 27 x 27) went 0.45 -> 0.21 ms
// (ORT's NCHWc pools 0.11 ms: no row tails), Zen 5, 1 thread.
// Reads the plane only inside it; writes no output past a row.
struct F32PoolKernels {
  const char* isa;
  size_t lanes;
  // NaN: max keeps what the reference's `v > best` keeps (the largest value that is not NaN;
  // -inf for a window of NaNs or of padding only).
  void (*maxpool)(const float* x, const F32PoolGeometry& g, float* row, float* y);
  // y[oh][ow] = sum of the window * inv_h[oh] * inv_w[ow] (reciprocal window counts; inv_w readable
  // up to a multiple of 16).
  void (*avgpool)(const float* x, const F32PoolGeometry& g, const float* inv_h, const float* inv_w, float* row,
                  float* y);
};

// y[c] = mean of x[c * n .. c * n + n) for c < channels.
void f32_global_avgpool__avx2(const float* x, size_t n, size_t channels, float* y);

}  // namespace lowbit

namespace LOWBIT_KERNEL_NS {
const ::lowbit::F32PoolKernels* f32_pool_avx2();    // x86-64 builds
const ::lowbit::F32PoolKernels* f32_pool_avx512();  // x86-64 builds
const ::lowbit::F32PoolKernels* f32_pool_neon();    // AArch64 builds
}  // namespace LOWBIT_KERNEL_NS
