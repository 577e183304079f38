#pragma once
// Sub-byte codes on the int8 GEMM layout (design: README.md next to this file).
//
// When one side of a product is a 4- or 2-bit code, vpmaddubsw (u8 x s8, pairs summed into int16
// with saturation) is exact, and so are int16 sums of up to G of its results:
//   G = floor(32767 / (2 * max|x| * max|w|))   (W4A8: 8, W2A8: 32, W4A4: 136, W8A4: 8, W8A2: 42)
// The kernels keep MR x NR int16 accumulators for G k groups, then widen them into int32 with one
// vpmaddwd against ones: per 32 multiply-adds one multiply instruction plus 1/G, against two
// vpmaddwd for the int16-widened int8 kernels (kernels/qu8-gemm/avx2.cc).
//
// Operand layout, epilogue and row_init contract: those of the VNNI kernels (qu8_gemm.h, kg = 4,
// not widened, x_shift = 0): a = int32 words of 4 int8 weights per row and k group, b = 4 raw u8
// activations per pixel and k group, row_init = -zp_x * sum_k w.
#include "lowbit/kernels/qu8-gemm/qu8_gemm.h"

namespace LOWBIT_KERNEL_NS {
// The kernel set for int16 spans of at least `groups` k groups (8, 32 or 128); nullptr otherwise.
const ::lowbit::Qu8GemmKernels* qsub_gemm_kernels_avx2(int groups);
// ARMv8.0 NEON (neon.cc): s8 x s8 smull / smlal2 into int16 pairs, sadalp into int32, on inner
// products of 16 k; activations packed as x - x_shift (128 for u8 codes, 0 for 4- / 2-bit ones).
const ::lowbit::Qu8GemmKernels& qsub_gemm_kernels_neon(int x_shift);
}  // namespace LOWBIT_KERNEL_NS
