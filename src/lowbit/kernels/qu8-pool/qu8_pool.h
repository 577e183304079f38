#pragma once
// u8 pooling of CHW planes (quantized activations keep their scale through pooling, so these
// move and select bytes; notes/quant_ir.md).
//
// MaxPool reads a plane that the driver padded with 0 and split into SW column phases, so that
// every tap of an output row reads consecutive bytes whatever the stride: padded column c of
// padded row r lives at x[(r * SW + c % SW) * ld_phase + c / SW]. 0 is the smallest u8, so the
// padding never wins a window, exactly as the reference, which skips padded taps.
#include <cstddef>
#include <cstdint>

namespace lowbit {

struct Qu8PoolGeometry {
  size_t KH, KW, SH, SW, DH, DW;
  size_t OH, OW;
  size_t ld_phase;  // bytes per phase row, >= ceil(padded width / SW) + 32 (vector reads past OW)
};

// One input row (W bytes at src) after pad_left zero columns into its SW phase rows (dst + f *
// ld_phase for f < SW); every other byte of those rows is zeroed (right padding included).
void qu8_pool_phase_row__avx2(const uint8_t* src, size_t W, size_t pad_left, size_t SW, size_t ld_phase,
                              uint8_t* dst);

// y[oh][ow] = max over kh, kw of padded[oh * SH + kh * DH][ow * SW + kw * DW].
void qu8_maxpool2d_chw__avx2(const uint8_t* x, const Qu8PoolGeometry& g, uint8_t* y);

// y[c] = int(nearbyintf(float(sum of x[c * n .. c * n + n)) / float(n))) for c < channels.
void qu8_global_avgpool__avx2(const uint8_t* x, size_t n, size_t channels, uint8_t* y);

// The same three on AArch64 Advanced SIMD (kernels/qu8-pool/neon.cc).
void qu8_pool_phase_row__neon(const uint8_t* src, size_t W, size_t pad_left, size_t SW, size_t ld_phase,
                              uint8_t* dst);
void qu8_maxpool2d_chw__neon(const uint8_t* x, const Qu8PoolGeometry& g, uint8_t* y);
void qu8_global_avgpool__neon(const uint8_t* x, size_t n, size_t channels, uint8_t* y);

// One ISA's pooling functions, for the drivers (operators/pool2d_u8.cc).
struct Qu8PoolKernels {
  void (*phase_row)(const uint8_t* src, size_t W, size_t pad_left, size_t SW, size_t ld_phase, uint8_t* dst);
  void (*maxpool)(const uint8_t* x, const Qu8PoolGeometry& g, uint8_t* y);
  void (*global_avgpool)(const uint8_t* x, size_t n, size_t channels, uint8_t* y);
};

}  // namespace lowbit
