// ARMv8.2 dot-product qu8 GEMM: `sdot` (4 x s8 x s8 -> int32 per lane, no saturation), exact.
//
// sdot has no u8 x s8 form (usdot is in the i8mm extension), so activations become s8 while
// packing: x ^ 0x80 = x - 128 in [-128, 127]. The driver starts each accumulator at
// row_init[m] = (128 - zp_x) * sum_k w[m][k] (Qu8GemmKernels::x_shift = 128), which turns
// sum (x - 128) * w into sum (x - zp_x) * w exactly (int32 arithmetic, modulo 2^32 throughout).
// Padding holds zp_x, packed like any other activation.
//
// Layouts are the VNNI ones: weights are int32 words of 4 consecutive-k s8 per channel (MR words
// per k group), a panel's k group is NR pixels x 4 s8. Tile 6 x 16: 24 int32x4 accumulators, per
// k group four B loads and one and a half A loads, 24 sdot by lane (4 channels per A vector).
#include "lowbit/kernels/qu8-gemm/qu8_neon_inl.h"
#include "lowbit/kernels/qsub-gemm/qsub_panel.h"
#include "lowbit/kernels/qu8-gemm/qu8_group_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

// Group-wise weight scales folded in per K block (kernels/qu8-gemm/qu8_group_inl.h).
LOWBIT_GROUP_EPILOGUE(qu8, neondot)

// 4- and 2-bit weight panels expanded per tile (kernels/qsub-gemm/qsub_panel.h).
LOWBIT_SUBBYTE_EXPANDERS(neondot)

using ::lowbit::Qu8GemmEpilogue;
using ::lowbit::Qu8GemmKernels;
using ::lowbit::Qu8Im2colRun;

template <int MR, int NR, int... R>
inline void sdot_rows(int32x4_t (&acc)[MR][NR / 4], const int8x16_t (&bv)[NR / 4], const int8x16_t (&av)[(MR + 3) / 4],
                      std::integer_sequence<int, R...>) {
  auto row = [&]<int r>() {
#pragma GCC unroll 4
    for (int v = 0; v < NR / 4; ++v) acc[r][v] = vdotq_laneq_s32(acc[r][v], bv[v], av[r / 4], r % 4);
  };
  (row.template operator()<R>(), ...);
}

template <int MR, int NR>
void qu8_gemm_tile__neondot(size_t nc, size_t kg, const void* a_, const void* b_, uint8_t* c, size_t ldc,
                            const Qu8GemmEpilogue& e) {
  constexpr int NV = NR / 4, NA = (MR + 3) / 4;
  const int8_t* __restrict a = static_cast<const int8_t*>(a_);
  const int8_t* __restrict b = static_cast<const int8_t*>(b_);
  int32x4_t acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = e.first ? vdupq_n_s32(e.row_init ? e.row_init[r] : 0) : vld1q_s32(e.partial + r * NR + v * 4);

  for (size_t g = 0; g < kg; ++g) {
    int8x16_t bv[NV], av[NA];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = vld1q_s8(b + 16 * v);
#pragma GCC unroll 2
    for (int i = 0; i < NA; ++i) {
      if (i < MR / 4) av[i] = vld1q_s8(a + 16 * i);
      else av[i] = ::lowbit::load_s8_partial<MR % 4 == 0 ? 16 : 4 * (MR % 4)>(a + 16 * i);
    }
    sdot_rows<MR, NR>(acc, bv, av, std::make_integer_sequence<int, MR>());
    a += 4 * MR;
    b += 4 * NR;
  }

  if (!e.last) {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) vst1q_s32(e.partial + r * NR + v * 4, acc[r][v]);
    return;
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) ::lowbit::qu8_requant_store_row_neon<NR>(acc[r], nc, r, c + r * ldc, e);
}

// Packs kg groups of 4 k values of an NR-pixel panel as s8 (x - 128), pixel-major within a group:
// b[(g * NR + j) * 4 + i] = x[koff[4g + i] + pixel j] ^ 0x80 (st4 interleaves the four rows).
template <int NR>
void qu8_pack_s8x4__neondot(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff, const Qu8Im2colRun* runs,
                            size_t nruns, size_t stride, size_t nr, uint8_t zp_x, void* b_) {
  uint8_t* b = static_cast<uint8_t*>(b_);
  const bool direct = nruns == 1 && runs[0].len == NR && stride == 1;
  uint8_t t[4][NR + 32];
  for (size_t g = 0; g < kg; ++g) {
    const uint8_t* row[4];
    for (int i = 0; i < 4; ++i) {
      if (direct) {
        row[i] = x + koff[4 * g + i] + runs[0].src;
      } else {
        ::lowbit::qu8_gather_row_neon(x, avail, koff[4 * g + i], runs, nruns, stride, NR, zp_x, t[i]);
        row[i] = t[i];
      }
    }
    if constexpr (NR == 16) {
      const uint8x16_t flip = vdupq_n_u8(0x80);
      uint8x16x4_t v;
      for (int i = 0; i < 4; ++i) v.val[i] = veorq_u8(vld1q_u8(row[i]), flip);
      vst4q_u8(b, v);
    } else {
      const uint8x8_t flip = vdup_n_u8(0x80);
      uint8x8x4_t v;
      for (int i = 0; i < 4; ++i) v.val[i] = veor_u8(vld1_u8(row[i]), flip);
      vst4_u8(b, v);
    }
    b += 4 * NR;
  }
}

}  // namespace

const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_neondot() {
  static const Qu8GemmKernels ks = [] {
    Qu8GemmKernels k;
    k.isa = "neondot";
    k.mr = 6;
    k.kg = 4;
    k.widened = false;
    k.x_shift = 128;
    k.nr = 16;
    k.nr_tail = 8;
    k.kc_max = 1024;
    k.main[1] = qu8_gemm_tile__neondot<1, 16>;
    k.main[2] = qu8_gemm_tile__neondot<2, 16>;
    k.main[3] = qu8_gemm_tile__neondot<3, 16>;
    k.main[4] = qu8_gemm_tile__neondot<4, 16>;
    k.main[5] = qu8_gemm_tile__neondot<5, 16>;
    k.main[6] = qu8_gemm_tile__neondot<6, 16>;
    k.tail[1] = qu8_gemm_tile__neondot<1, 8>;
    k.tail[2] = qu8_gemm_tile__neondot<2, 8>;
    k.tail[3] = qu8_gemm_tile__neondot<3, 8>;
    k.tail[4] = qu8_gemm_tile__neondot<4, 8>;
    k.tail[5] = qu8_gemm_tile__neondot<5, 8>;
    k.tail[6] = qu8_gemm_tile__neondot<6, 8>;
    k.pack = qu8_pack_s8x4__neondot<16>;
    k.pack_tail = qu8_pack_s8x4__neondot<8>;
    k.group_fma = qu8_group_fma__neondot;
    k.group_finish = qu8_group_finish__neondot;
    k.expand4 = qsub_expand_w4__neondot;
    k.expand2 = qsub_expand_w2__neondot;
    return k;
  }();
  return ks;
}

}  // namespace LOWBIT_KERNEL_NS
