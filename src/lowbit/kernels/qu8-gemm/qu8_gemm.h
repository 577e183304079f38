#pragma once
// u8 x i8 -> i32 GEMM micro-kernels with the fused requantization epilogue, and the im2col packers
// that feed them (design: README.md next to this file).
//
// Orientation (as the fp32 kernels): rows = output channels (weights, packed once at creation and
// broadcast), columns = output pixels (activations, im2col-packed per panel), so a tile row is NR
// consecutive pixels of one channel and stores straight into NCHW.
//
// K is processed in groups of KG values (KG = 2 for the AVX2 int16 kernels, 4 for VNNI):
//   a: kg groups x MR rows x one int32 word of KG weights (2 x int16 for AVX2, 4 x int8 for VNNI,
//      lowest k in the lowest bits)
//   b: kg groups x NR pixels x KG activations  (int16 = x - zp_x for AVX2, raw u8 for VNNI)
// acc[r][j] = (first ? row_init[r] (0 if null) : partial[r*NR + j]) + sum_k a[k][r] * b[k][j]
// last:  c[r*ldc + j] = requantize(acc[r][j]) for j < nc (README.md gives the exact formula)
// !last: partial[r*NR + j] = acc[r][j]
#include <cstddef>
#include <cstdint>

// A SIMDe build of an ISA source (tests/simde) defines LOWBIT_KERNEL_NS to move its symbols out
// of the way of the real ones.
#ifndef LOWBIT_KERNEL_NS
#define LOWBIT_KERNEL_NS lowbit
#endif

namespace lowbit {

struct Qu8GemmEpilogue {
  bool first = true, last = true;
  const int32_t* row_init = nullptr;  // MR values (VNNI: -zp_x * sum_k w[m]); nullptr = 0
  int32_t* partial = nullptr;         // MR x NR partial sums between K blocks (row stride NR)
  // Requantization (last block only), per row: t = fma(float(acc), scale[r], bias[r]);
  // with res: t = fma(float(res[r*ld_res + j] - res_zp), res_scale, t);
  // y = int(round_half_even(clamp(t, qmin, qmax))) + zp_y.
  const float* scale = nullptr;  // MR values
  const float* bias = nullptr;   // MR values
  const uint8_t* res = nullptr;
  size_t ld_res = 0;
  float res_scale = 0.0f;
  int32_t res_zp = 0;
  float qmin = 0.0f, qmax = 255.0f;  // output clamp minus zp_y (integers, as floats)
  int32_t zp_y = 0;
};

using Qu8GemmUkernel = void (*)(size_t nc, size_t kg, const void* a, const void* b, uint8_t* c, size_t ldc,
                                const Qu8GemmEpilogue& e);

// One run of a panel's pixels whose sources are evenly spaced: pixel dst + i of row k reads
// x[koff[k] + src + i * stride].
struct Qu8Im2colRun {
  int64_t src;
  int32_t dst;
  int32_t len;
};

// Packs kg groups of a B panel (nr pixels) from the u8 input x through koff (kg * KG offsets);
// pixels no run covers get zp_x. x is readable for `avail` bytes (vector loads stay inside).
using Qu8Im2colPack = void (*)(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff, const Qu8Im2colRun* runs,
                               size_t nruns, size_t stride, size_t nr, uint8_t zp_x, void* b);

// Expands `chunks` chunks of 64 packed sub-byte codes into int8 codes (layout:
// kernels/qsub-gemm/qsub_panel.h).
using Qu8ExpandCodes = void (*)(const uint8_t* src, size_t chunks, int8_t* dst);

// Group-wise weights (qu8_group_inl.h): acc = fmaf(float(partial), scale[row], acc) over an MR x NR
// tile, and the contract's residual / clamp / round / store from such float sums.
using Qu8GroupFma = void (*)(const int32_t* partial, const float* scale, size_t mr, size_t nr, float* acc);
using Qu8GroupFinish = void (*)(const float* acc, size_t mr, size_t nr, size_t nc, uint8_t* c, size_t ldc,
                                const Qu8GemmEpilogue& e);

// What a conv / fc driver needs from one ISA.
struct Qu8GemmKernels {
  static constexpr int kMaxMR = 16;
  const char* isa = "";
  int mr = 6;                  // rows of the main tile; main[1..mr] / tail[1..mr] are all set
  int kg = 2;                  // K values per group
  bool widened = true;         // a/b are int16 with zp_x subtracted from b (AVX2); else u8/i8 (VNNI)
  // Bits per weight code in a's words (not widened): 8 = kg int8 weights per word; 4 or 2 = the
  // words of 8 / bits consecutive k groups packed together, unpacked in registers by the tiles
  // as 2^(8 - bits) w (exact int8; kernels/qsub-gemm/README.md). The driver packs such words and
  // scales row_init and the requantization scale by 2^(8 - bits) to match.
  int weight_bits = 8;
  // Not widened: the packer stores x - x_shift (0 for vpdpbusd's u8; 128 for sdot, whose operands
  // are both s8: x ^ 0x80), and row_init = (x_shift - zp_x) * sum_k w[m][k] restores sum (x - zp_x) w.
  int32_t x_shift = 0;
  int nr = 16, nr_tail = 8;    // panel widths (nr 16, 32 or 48)
  int kc_max = 512;            // K values per block: one kc x nr B panel stays in L1
  Qu8GemmUkernel main[kMaxMR + 1] = {};  // MR x nr, indexed by MR
  Qu8GemmUkernel tail[kMaxMR + 1] = {};  // MR x nr_tail
  // Optional, for nr_tail panels of nc <= narrow_max pixels: channels in lanes (a row panel's
  // weight words are the vector, each pixel's activation word the broadcast), so a panel of 1 pixel
  // (ResNet's 7 x 7 = 3 x 16 + 1) costs one instruction per k group instead of MR. Same a / b /
  // epilogue contract as tail[], but its own layout of e.partial (at most MR x nr_tail words).
  int narrow_max = 0;
  Qu8GemmUkernel narrow[kMaxMR + 1] = {};
  Qu8Im2colPack pack = nullptr;
  Qu8Im2colPack pack_tail = nullptr;     // nr_tail panels
  // Sets of int8 words (kg = 4, not widened) can keep 4- and 2-bit weights packed in memory: the
  // driver expands each panel block into L1 scratch right before its tiles read it. nullptr: such
  // weights are unpacked to int8 panels once, at creation.
  Qu8ExpandCodes expand4 = nullptr, expand2 = nullptr;
  Qu8ExpandCodes expand_for(int bits) const { return bits == 4 ? expand4 : bits == 2 ? expand2 : nullptr; }
  // Group-wise weight scales: the driver runs each group of K as one K block in partial mode and
  // folds its sums in with these (nullptr: the set cannot run group-wise weights).
  Qu8GroupFma group_fma = nullptr;
  Qu8GroupFinish group_finish = nullptr;
};

}  // namespace lowbit

namespace LOWBIT_KERNEL_NS {
// Exact u8 x s8 via int16 widening + vpmaddwd (no vpmaddubsw saturation).
const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_avx2();
// vpdpbusd (u8 x s8 -> i32, exact), zmm: 16 pixels per vector; 16 x 16 tiles (any map) and
// 8 x 32 and 8 x 48 tiles (fewer loads per vpdpbusd; for maps that fill their panels).
// weight_bits 4 or 2: the same tiles on 4- / 2-bit weight codes packed in their words (weight_bits;
// the 16 x 16 set has none: unpacking 16 rows in registers cost one instruction per vpdpbusd).
const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_avx512vnni();
const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_avx512vnni_8x32(int weight_bits = 8);
const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_avx512vnni_8x48(int weight_bits = 8);
// VEX vpdpbusd on ymm (Alder Lake+, Zen 5).
const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_avxvnni();
// AArch64 Advanced SIMD: int16 widening + smlal (u8 - zp_x and i8 both fit int16, exact).
const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_neon();
// ARMv8.2 dot product: sdot on s8 x s8 (activations shifted by -128 while packing), exact.
const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_neondot();
}  // namespace LOWBIT_KERNEL_NS
