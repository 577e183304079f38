#pragma once
// Depthwise qu8 convolution of one channel plane, exact to the QConv contract
// (kernels/qu8-gemm/README.md), on flat polyphase planes (design: README.md next to this file).
//
// The padded plane is split into row phases (phase ph holds padded rows ph, ph + SH, ...), each R
// rows, so that output row oh, tap row kh reads row oh + kh / SH of phase kh % SH. G consecutive
// values of a row (G = 2 for the int16 kernels, 4 for the u8 / s8 dot products) form one int32
// word; word i of a row starts at value ws * i, so at stride 2 output ow's taps kw = q .. q + G - 1
// are word ow + q / 2 (ws = 2). At stride 3 and more the columns are split into SW phases too, and
// ws = 1 (as at stride 1).
//
// Indexing each phase flat (row r at r * L words), output o = oh * L + ow reads word o + off(group):
// one long 1-D convolution over OH * L outputs, of which OW of every L are kept. No row tails, no
// per-row loop: a 7 x 7 plane is 4 vectors of 16 instead of 7 vectors with 7 lanes used. A group
// costs one vector load and one multiply-add (vpmaddwd, vpdpbusd, sdot) per vector of outputs.
#include <cstddef>
#include <cstdint>

#include "lowbit/kernels/qu8-gemm/qu8_gemm.h"

namespace lowbit {

struct Qu8DwPlan {
  static constexpr size_t kMaxGroups = 64;
  static constexpr size_t kVec = 16;  // outputs per step of every kernel
  size_t H = 0, W = 0, OH = 0, OW = 0, SH = 1, SW = 1, pad_top = 0, pad_left = 0;
  uint8_t zp_x = 0;
  size_t G = 2;          // tap values per word
  size_t cp = 1, ws = 1;  // column phases (1 at stride 1 and 2, else SW) and values per word step (1 or 2)
  size_t L = 0, R = 0;    // words per phase row (ws * L values), rows per phase
  size_t n_flat = 0;    // outputs computed: OH * L rounded up to kVec
  size_t words = 0;     // words of the word plane (the phases, and what the last vector reads past them);
                        // the value plane has ws * words + 64 bytes
  size_t ngroups = 0;
  int32_t off[kMaxGroups] = {};  // word offset of each tap group from an output's flat index

  // Bytes of scratch one plane needs (value plane, word plane, flat output, flat residual).
  size_t scratch_bytes() const { return (ws * words + 64 + 63) / 64 * 64 + 4 * words + 2 * (n_flat + 64); }
};

// The plan of a depthwise conv (dilation 1) for groups of G taps; ngroups = 0 when it has more than
// kMaxGroups groups.
Qu8DwPlan qu8_dw_plan(size_t H, size_t W, size_t KH, size_t KW, size_t SH, size_t SW, size_t pad_top,
                      size_t pad_left, size_t OH, size_t OW, uint8_t zp_x, size_t G);

// One channel's weights (KH x KW int8, kh-major) as the plan's group words: G int16 (widened
// kernels) or G int8 (dot-product kernels) per word, lowest tap in the lowest bits, zeros where a
// group runs past its kernel row.
void qu8_dw_pack_weights(const Qu8DwPlan& p, size_t KH, size_t KW, const int8_t* w, bool widened, int32_t* words);

// y (OH x OW) = requantize(init + sum over taps of w * (x - zp_x)) for one channel plane x (H x W),
// with e's row-0 constants and e.res the residual plane (OH x OW) or nullptr. Widened kernels store
// x - zp_x as int16 (init = 0); dot-product kernels store x - x_shift as 8 bits, and init is
// (x_shift - zp_x) * sum(w). scratch: p.scratch_bytes(), 64-byte aligned.
using Qu8DwPlaneKernel = void (*)(const uint8_t* x, const Qu8DwPlan& p, const int32_t* w, int32_t init, uint8_t* y,
                                  const Qu8GemmEpilogue& e, void* scratch);

struct Qu8DwKernel {
  const char* isa = "";
  size_t G = 2;
  bool widened = true;  // int16 pairs of x - zp_x, else 8-bit quads of x - x_shift
  int32_t x_shift = 0;  // 0 for vpdpbusd's u8, 128 for sdot's s8
  Qu8DwPlaneKernel plane = nullptr;
};

}  // namespace lowbit

namespace LOWBIT_KERNEL_NS {
const ::lowbit::Qu8DwKernel& qu8_dwconv_avx2();        // vpmaddwd on int16 pairs
const ::lowbit::Qu8DwKernel& qu8_dwconv_avx512vnni();  // vpdpbusd on zmm: 16 outputs x 4 taps each
const ::lowbit::Qu8DwKernel& qu8_dwconv_avxvnni();     // VEX vpdpbusd on ymm
const ::lowbit::Qu8DwKernel& qu8_dwconv_neon();        // smull-free: int16 products (|255 * 128| fits) + sadalp
const ::lowbit::Qu8DwKernel& qu8_dwconv_neondot();     // sdot on s8 quads
}  // namespace LOWBIT_KERNEL_NS
