// ARMv8.0 NEON sub-byte GEMM (no dot product): 8-bit multiplies, exact because one side is narrow.
//
// Without sdot, the int8 kernels (qu8-gemm/neon.cc) widen both operands to int16 and multiply by
// lane with smlal: 4 multiply-adds per instruction. When the weights are 4- or 2-bit codes (or the
// activations are), s8 x s8 products are small enough that smull / smlal2 (8 products into int16
// lanes, two per lane) cannot overflow, and sadalp folds the int16 pairs into int32:
//   u8 x i4:  (x - 128) in [-128, 127], |w| <= 8:    |p0 + p1| <= 2 * 128 * 8  = 2048
//   u8 x i2:                            |w| <= 2:    |p0 + p1| <= 512
//   u4 x i8:  x in [0, 15] (no shift), |w| <= 128:   |p0 + p1| <= 2 * 15 * 128 = 3840
// 8 multiply-adds per multiply instruction, twice the int16 kernels' (README.md here).
//
// Inner products rather than outer ones (8-bit multiplies have no by-lane form): a k group is 16
// consecutive k of one row (weights) and of one pixel (activations); tile 4 x 4 keeps 16 int32x4
// accumulators, one per (channel, pixel), and per group 4 + 4 loads and 16 x (smull, smlal2,
// sadalp). At the end each accumulator is summed across its lanes (addp), one int32x4 per row.
// Layouts: a = per group, MR rows x 16 int8; b = per group, NP pixels x 16 int8 (x - x_shift).
#include "lowbit/kernels/qu8-gemm/qu8_neon_inl.h"
#include "lowbit/kernels/qsub-gemm/qsub_gemm.h"
#include "lowbit/kernels/qsub-gemm/qsub_panel.h"
#include "lowbit/kernels/qu8-gemm/qu8_group_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

// Group-wise weight scales folded in per K block (kernels/qu8-gemm/qu8_group_inl.h).
LOWBIT_GROUP_EPILOGUE(qsub, neon)

// 4- and 2-bit weight panels expanded once per run (kernels/qsub-gemm/qsub_panel.h).
LOWBIT_SUBBYTE_EXPANDERS(neon)

using ::lowbit::Qu8GemmEpilogue;
using ::lowbit::Qu8GemmKernels;
using ::lowbit::Qu8Im2colRun;

constexpr int kNP = 4;   // pixels per panel
constexpr int kKG = 16;  // k per group

template <int MR>
void qsub_gemm_tile__neon(size_t nc, size_t kg, const void* a_, const void* b_, uint8_t* c, size_t ldc,
                          const Qu8GemmEpilogue& e) {
  const int8_t* __restrict a = static_cast<const int8_t*>(a_);
  const int8_t* __restrict b = static_cast<const int8_t*>(b_);
  int32x4_t acc[MR][kNP];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < kNP; ++j) acc[r][j] = vdupq_n_s32(0);
  for (size_t g = 0; g < kg; ++g) {
    int8x16_t av[MR], bv[kNP];
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) av[r] = vld1q_s8(a + kKG * r);
#pragma GCC unroll 4
    for (int j = 0; j < kNP; ++j) bv[j] = vld1q_s8(b + kKG * j);
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < kNP; ++j) {
        int16x8_t t = vmull_s8(vget_low_s8(av[r]), vget_low_s8(bv[j]));
        t = vmlal_high_s8(t, av[r], bv[j]);
        acc[r][j] = vpadalq_s16(acc[r][j], t);
      }
    a += kKG * MR;
    b += kKG * kNP;
  }
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) {
    // Lanes of pixel j's accumulator summed into lane j (wrap-around int32, as every kernel).
    int32x4_t row[1] = {vpaddq_s32(vpaddq_s32(acc[r][0], acc[r][1]), vpaddq_s32(acc[r][2], acc[r][3]))};
    row[0] = vaddq_s32(row[0], e.first ? vdupq_n_s32(e.row_init ? e.row_init[r] : 0) : vld1q_s32(e.partial + r * kNP));
    if (!e.last) {
      vst1q_s32(e.partial + r * kNP, row[0]);
      continue;
    }
    // A 4-pixel row through the 8-pixel epilogue: lanes 4-7 are never stored (nc <= 4).
    int32x4_t wide[2] = {row[0], row[0]};
    ::lowbit::qu8_requant_store_row_neon<8>(wide, nc, r, c + r * ldc, e);
  }
}

// Packs kg groups of a kNP-pixel panel: b[(g * kNP + j) * 16 + i] = x[koff[16 g + i] + pixel j] - Shift.
template <int Shift>
void qsub_pack_s8x16__neon(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff, const Qu8Im2colRun* runs,
                           size_t nruns, size_t stride, size_t nr, uint8_t zp_x, void* b_) {
  int8_t* b = static_cast<int8_t*>(b_);
  uint8_t t[kKG][kNP + 32];
  for (size_t g = 0; g < kg; ++g) {
    for (int i = 0; i < kKG; ++i)
      ::lowbit::qu8_gather_row_neon(x, avail, koff[kKG * g + i], runs, nruns, stride, kNP, zp_x, t[i]);
    // 16 k x 4 pixels -> 4 pixels x 16 k: gather the columns, then one xor per vector.
    for (int j = 0; j < kNP; ++j) {
      uint8_t col[kKG];
      for (int i = 0; i < kKG; ++i) col[i] = t[i][j];
      uint8x16_t v = vld1q_u8(col);
      if constexpr (Shift == 128) v = veorq_u8(v, vdupq_n_u8(0x80));  // x ^ 0x80 = x - 128 as s8
      vst1q_s8(b + kKG * j, vreinterpretq_s8_u8(v));
    }
    b += kKG * kNP;
  }
}

template <int Shift>
Qu8GemmKernels make_kernels() {
  Qu8GemmKernels k;
  k.isa = "neon";
  k.mr = 4;
  k.kg = kKG;
  k.widened = false;
  k.x_shift = Shift;
  k.nr = kNP;
  k.nr_tail = kNP;
  k.kc_max = 2048;  // 8 KB of A and B per block: both stay in L1
  k.main[1] = k.tail[1] = qsub_gemm_tile__neon<1>;
  k.main[2] = k.tail[2] = qsub_gemm_tile__neon<2>;
  k.main[3] = k.tail[3] = qsub_gemm_tile__neon<3>;
  k.main[4] = k.tail[4] = qsub_gemm_tile__neon<4>;
  k.pack = k.pack_tail = qsub_pack_s8x16__neon<Shift>;
  k.group_fma = qsub_group_fma__neon;
  k.group_finish = qsub_group_finish__neon;
  k.expand4 = qsub_expand_w4__neon;
  k.expand2 = qsub_expand_w2__neon;
  return k;
}

}  // namespace

const ::lowbit::Qu8GemmKernels& qsub_gemm_kernels_neon(int x_shift) {
  static const Qu8GemmKernels shifted = make_kernels<128>(), plain = make_kernels<0>();
  return x_shift == 128 ? shifted : plain;
}

}  // namespace LOWBIT_KERNEL_NS
