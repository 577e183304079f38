#pragma once
// Binary (b1 x b1) convolution: XOR + popcount over bit-packed channels (design: README.md next
// to this file).
//
// The b1 code: bit 0 = +1, bit 1 = -1 (the sign bit of the value it stands for, as Larq Compute
// Engine packs it). With that code, for two words of 64 values
//   sum_i x_i * w_i = 64 - 2 * popcount(x ^ w)
// so a binary conv does 64 multiply-adds per XOR + popcount of one 64-bit word.
//
// Layouts (channels innermost, as the bits are packed):
//   activations: [H][W][CW] uint64 words, CW = ceil(C / 64); channel c is bit c % 64 of word c / 64;
//                bits past C are 0 (so a XOR with weights, whose tail bits are 0 too, never counts them)
//   weights:     [M][KH][KW][CW] words, the same per output channel and tap
//   output:      int32 [M][OH * OW], the exact integer dot product of the +-1 values (NCHW: row m
//                is one output channel, as the int8 kernels store)
//
// Micro-kernel orientation (as the int8 GEMMs): rows = output channels (weights broadcast), columns
// = output pixels (im2col-packed words, a vector of pixels), so one instruction serves NR pixels.
//   a: kw words x MR rows (row r of word k at a[k * MR + r]; split_nibbles: its low-nibble word at
//      a[(k * MR + r) * 2], its high-nibble word next)
//   b: kw words x NR pixels (b[k * NR + j]; split_nibbles: b[k * 2 * NR + j] the low nibbles (w & 0x0f..),
//      b[k * 2 * NR + NR + j] the high ones ((w >> 4) & 0x0f..))
//   c[r * ldc + j] = ktot - 2 * sum_k popcount(a[k][r] ^ b[k][j])   for j < nc
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "lowbit/target/target.h"

#ifndef LOWBIT_KERNEL_NS
#define LOWBIT_KERNEL_NS lowbit
#endif

namespace lowbit {

using Qb1GemmUkernel = void (*)(size_t kw, const uint64_t* a, const uint64_t* b, int32_t ktot, int32_t* c, size_t ldc,
                                size_t nc);

// The operator's two loops around the GEMM (operators/binary_conv2d.cc), compiled per ISA like
// the tiles: from baseline x86-64 code, std::fmaf and nearbyintf are libm calls (software fma)
// and the epilogue alone took 2 ms of a 0.5 ms layer.
//   pack_u1: channel-packs u1 codes {0, 1} (NCHW u8, planes of hw) into [hw][cw] words, every
//            word of pixels [p_begin, p_end): bit 1 (the value -1) where the code is 0.
//   requant: one output channel's n accumulators D of the XOR kernel to u8:
//            dot = (D + w_sum) / 2 - zp_x * w_sum, then the int8 contract's requantization.
//            For sign-binarised inputs (BinaryConv) w_sum = zp_x = 0 and shift = 0: dot = D.
//   pack_sign_u8 / pack_sign_f32: the same packing of a real-valued input by its sign (BinaryConv):
//            bit 1 where the u8 code is below zp (the real value is negative), or the float is < 0.
//   epilogue_f32: y = fmaf(D, alpha, bias) (+ residual), clamped to [lo, hi] (BinaryConv in fp32).
struct Qb1Requant {
  int32_t w_sum = 0, zp_x = 0;
  int32_t shift = 1;  // dot = (D + w_sum - 2 * zp_x * w_sum) >> shift
  float scale = 0.0f, bias = 0.0f;
  const uint8_t* res = nullptr;  // n residual codes, or nullptr
  float res_scale = 0.0f;
  int32_t res_zp = 0;
  float qmin = 0.0f, qmax = 255.0f;  // clamp relative to zp_y
  int32_t zp_y = 0;
};
using Qb1PackU1 = void (*)(const uint8_t* x, int64_t C, int64_t hw, int64_t cw, int64_t p_begin, int64_t p_end,
                           uint64_t* bits);
using Qb1RequantRow = void (*)(const int32_t* acc, size_t n, const Qb1Requant& e, uint8_t* y);
using Qb1PackSignU8 = void (*)(const uint8_t* x, int64_t C, int64_t hw, int64_t cw, int64_t p_begin, int64_t p_end,
                               uint8_t zp, uint64_t* bits);
using Qb1PackSignF32 = void (*)(const float* x, int64_t C, int64_t hw, int64_t cw, int64_t p_begin, int64_t p_end,
                                uint64_t* bits);
struct Qb1EpilogueF32 {
  float alpha = 1.0f, bias = 0.0f;
  const float* res = nullptr;  // n residual values, or nullptr
  float lo = -__builtin_inff(), hi = __builtin_inff();
};
using Qb1EpilogueF32Row = void (*)(const int32_t* acc, size_t n, const Qb1EpilogueF32& e, float* y);
// signs_out: the output as packed signs (ir/codes.h), a BatchNorm + Sign after the conv as one
// integer threshold per channel: for pixels j < n, channel m of pixel j is -1 (bit 1) where
// acc[m * ldo + j] < thr[m]. Writes words [j][M / 64]; M % 64 == 0.
using Qb1SignsOut = void (*)(const int32_t* acc, size_t ldo, size_t n, int64_t M, const int32_t* thr, uint64_t* out);

// One ISA's binary GEMM: main[MR] is the MR x nr tile (MR = 1..mr). Constant-initialized in its
// ISA's file (no code compiled with that ISA's flags runs until a kernel does: listing the sets on
// a CPU without AVX-512 must not execute an EVEX store).
struct Qb1GemmKernels {
  static constexpr int kMaxMR = 8;
  const char* name = "";     // "qb1-qb1w-gemm-4x8-avx2": activation, weight, tile, ISA
  const char* isa = "";
  uint32_t features = 0;     // Feature bits the host must have (Target::features)
  int mr = 4, nr = 8;
  // Weight words packed as two words, their low nibbles and their high nibbles shifted down
  // (0x0f0f.. masked): a nibble-table popcount (AVX2 vpshufb) then splits only the pixels' words,
  // once per k for all MR rows, instead of every XOR result (see avx2.cc for the measurement).
  bool split_nibbles = false;
  Qb1GemmUkernel main[kMaxMR + 1] = {};
  Qb1PackU1 pack_u1 = nullptr;
  Qb1RequantRow requant = nullptr;
  Qb1PackSignU8 pack_sign_u8 = nullptr;
  Qb1PackSignF32 pack_sign_f32 = nullptr;
  Qb1EpilogueF32Row epilogue_f32 = nullptr;
  Qb1SignsOut signs_out = nullptr;
  bool runs_on(const Target& t) const { return (t.features & features) == features; }
};
constexpr uint32_t feature_bits(std::initializer_list<Feature> fs) {
  uint32_t b = 0;
  for (Feature f : fs) b |= 1u << static_cast<unsigned>(f);
  return b;
}

// Every compiled kernel set of this architecture, fastest first (the test iterates over all of them;
// the ones the host lacks are skipped there, and tested through SIMDe or qemu).
const std::vector<const Qb1GemmKernels*>& qb1_gemm_kernel_sets();
// The first set the target can run (the portable one always can).
const Qb1GemmKernels& qb1_gemm_kernels_for(const Target& t);

// What an ONNX Conv's padding stands for on binary inputs. ONNX pads with 0, which is neither +1
// nor -1: zero padding is corrected exactly (each padded tap's weight sum is taken back out, as
// Larq's zero-padding correction does). Models trained with one-padding pad with +1 or -1.
enum class B1Padding : uint8_t { zero, plus_one, minus_one };

struct Qb1ConvShape {
  int64_t C = 0, H = 0, W = 0;  // input channels and map
  int64_t M = 0;                // output channels
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1;
  int64_t PT = 0, PL = 0, PB = 0, PR = 0;  // pads: top, left, bottom, right
  int64_t CW() const { return (C + 63) / 64; }
  int64_t OH() const { return (H + PT + PB - DH * (KH - 1) - 1) / SH + 1; }
  int64_t OW() const { return (W + PL + PR - DW * (KW - 1) - 1) / SW + 1; }
};
// "" if the shape is one the kernels take, else why not.
std::string check_qb1_conv_shape(const Qb1ConvShape& s);

// Bit-packs +-1 values (any value < 0 is -1, else +1) from NCHW [C][H][W] into [H][W][CW] words.
std::vector<uint64_t> pack_b1_nchw(const float* x, int64_t C, int64_t H, int64_t W);

// Weights packed once for one kernel set: MR-row panels of tap-major words, plus each output
// channel's per-tap weight sums (the zero-padding correction).
struct Qb1PackedWeights {
  Qb1ConvShape shape;
  int mr = 0;
  bool split_nibbles = false;    // as the kernel set's: two words (low, high nibbles) per word
  int64_t kw = 0;                // words per output channel: KH * KW * CW
  std::vector<uint64_t> panels;  // ceil(M / mr) panels of kw x mr words (x 2 when split; rows past M are 0)
  std::vector<int32_t> tap_sum;  // [M][KH * KW]: sum over channels of the tap's +-1 weights
  // The zero-padding correction by border class: an output row's class is the set of its kernel
  // rows that fall outside the image (row_class[oh]), a column's likewise (col_class[ow]); pixel
  // (oh, ow) has class row_class[oh] * col_classes + col_class[ow], and every pixel of a class
  // takes back the same per-channel sum of its padded taps' weight sums, border_corr[m * classes
  // + class] (class 0 is the interior: 0). 3x3 pad 1 has 9 classes. Subtracting tap by tap
  // instead (a read-modify-write chain per padded tap and channel) took a quarter of the
  // driver's time around the tiles on ResNet-18-binary.
  std::vector<int32_t> row_class, col_class;
  int32_t col_classes = 1, classes = 1;
  std::vector<int32_t> border_corr;
};
// w: [M][C][KH][KW] floats (< 0 is -1).
Qb1PackedWeights pack_b1_weights(const Qb1ConvShape& s, const float* w, const Qb1GemmKernels& k);

// out[m * OH*OW + p] = sum over taps inside the image (or every tap with one-padding) and channels
// of x * w, exactly. Output pixels [p_begin, p_end) only (the caller splits them over threads; a
// worker's panels are independent). x: [H][W][CW] words as pack_b1_nchw writes them.
void qb1_conv2d(const Qb1GemmKernels& k, const Qb1PackedWeights& w, const uint64_t* x, B1Padding pad, int32_t* out,
                int64_t p_begin, int64_t p_end);
// The same into a block: out[m * ldo + (p - p_begin)] for p in [p_begin, p_end), so that a caller
// can keep the int32 results of a few hundred pixels in L1 / L2 and requantize them at once (a
// whole layer's M x OH*OW accumulators, 0.8 MB at 64 x 56 x 56, went through memory).
void qb1_conv2d_block(const Qb1GemmKernels& k, const Qb1PackedWeights& w, const uint64_t* x, B1Padding pad,
                      int32_t* out, size_t ldo, int64_t p_begin, int64_t p_end);

}  // namespace lowbit

namespace LOWBIT_KERNEL_NS {
// Per-ISA kernel sets (each defined in its ISA's file; nullptr where not compiled).
const ::lowbit::Qb1GemmKernels* qb1_gemm_kernels_portable();
const ::lowbit::Qb1GemmKernels* qb1_gemm_kernels_avx2();     // vpshufb nibble table + vpsadbw
const ::lowbit::Qb1GemmKernels* qb1_gemm_kernels_avx512popcnt();  // vpopcntq
const ::lowbit::Qb1GemmKernels* qb1_gemm_kernels_neon();     // cnt + pairwise widening adds
}  // namespace LOWBIT_KERNEL_NS
