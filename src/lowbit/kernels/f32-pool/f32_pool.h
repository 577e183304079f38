#pragma once
// fp32 pooling of CHW planes.
#include <cstddef>

#ifndef LOWBIT_KERNEL_NS
#define LOWBIT_KERNEL_NS lowbit
#endif

namespace lowbit {

struct F32PoolGeometry {
  size_t KH, KW, SH, SW, DH, DW;
  size_t OH, OW;
};

// One ISA's pooling of one padded plane, written once (f32_pool_inl.h) over its vector traits:
// `lanes` output pixels of a row per vector, the window's taps accumulated in a register; stride 1
// loads directly, stride 2 deinterleaves two loads, other strides gather lane by lane. Row tails
// are stored partially (no write past a row).
struct F32PoolKernels {
  const char* isa;
  size_t lanes;
  // x: one plane already padded (row stride ld_x) with -inf (max) or 0 (average) and covering every
  // window, readable for 32 * SW + 32 floats past its last row. NaN: max keeps what the reference's
  // `v > best` keeps.
  void (*maxpool)(const float* x, size_t ld_x, const F32PoolGeometry& g, float* y);
  // y[oh][ow] = sum of the window * inv_h[oh] * inv_w[ow] (reciprocal window counts; inv_w readable
  // up to a multiple of 16).
  void (*avgpool)(const float* x, size_t ld_x, const F32PoolGeometry& g, const float* inv_h, const float* inv_w,
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
