// AArch64 Advanced SIMD qu8 GEMM: exact u8 x s8 through int16 widening and smlal (README.md).
//
// As the AVX2 kernels: activations are widened to int16 with zp_x subtracted while packing a
// panel (x - zp_x is in [-255, 255]), weights were widened once at creation, so every product
// fits int16 x int16 -> int32 and `smlal` / `smlal2` (by lane) accumulate it exactly into int32.
// No 8-bit multiplies: u8 x s8 has no exact 8-bit form before the dot-product extension.
//
// Tile 6 x 16: 24 int32x4 accumulators; per k pair four B loads (16 pixels x 2 k as int16) and
// one and a half A loads (6 channels x 2 k), 48 smlal/smlal2 with the weight taken by lane.
// Panel layout of a k pair: 16 int16 of k0, then 16 int16 of k1 (a lane-indexed multiply needs no
// interleaving); the weights keep the driver's layout, int32 words of (w[k0], w[k1]) per channel.
#include "lowbit/kernels/qu8-gemm/qu8_neon_inl.h"
#include "lowbit/kernels/qu8-gemm/qu8_group_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

// Group-wise weight scales folded in per K block (kernels/qu8-gemm/qu8_group_inl.h).
LOWBIT_GROUP_EPILOGUE(qu8, neon)

using ::lowbit::Qu8GemmEpilogue;
using ::lowbit::Qu8GemmKernels;
using ::lowbit::Qu8Im2colRun;

// The first N (2..8, even) int16 at p in a vector, reading only those.
template <int N>
inline int16x8_t load_s16_partial(const int16_t* p) {
  return vreinterpretq_s16_s8(::lowbit::load_s8_partial<2 * N>(reinterpret_cast<const int8_t*>(p)));
}

// acc[r] += b(k0) * a[r][k0] + b(k1) * a[r][k1] for every row r: the weights by lane (immediates,
// hence the parameter pack). av holds the k pair's weights, 2 per row, row r at lanes 2r, 2r + 1.
template <int MR, int NR, int... R>
inline void smlal_rows(int32x4_t (&acc)[MR][NR / 4], const int16x8_t (&b0)[NR / 8], const int16x8_t (&b1)[NR / 8],
                       const int16x8_t (&av)[(2 * MR + 7) / 8], std::integer_sequence<int, R...>) {
  auto row = [&]<int r>() {
    constexpr int v = 2 * r / 8, l0 = 2 * r % 8, l1 = l0 + 1;
#pragma GCC unroll 2
    for (int j = 0; j < NR / 8; ++j) {
      acc[r][2 * j] = vmlal_laneq_s16(acc[r][2 * j], vget_low_s16(b0[j]), av[v], l0);
      acc[r][2 * j + 1] = vmlal_high_laneq_s16(acc[r][2 * j + 1], b0[j], av[v], l0);
      acc[r][2 * j] = vmlal_laneq_s16(acc[r][2 * j], vget_low_s16(b1[j]), av[v], l1);
      acc[r][2 * j + 1] = vmlal_high_laneq_s16(acc[r][2 * j + 1], b1[j], av[v], l1);
    }
  };
  (row.template operator()<R>(), ...);
}

template <int MR, int NR>
void qu8_gemm_tile__neon(size_t nc, size_t kg, const void* a_, const void* b_, uint8_t* c, size_t ldc,
                         const Qu8GemmEpilogue& e) {
  constexpr int NV = NR / 4, NB = NR / 8, NA = (2 * MR + 7) / 8;
  const int16_t* __restrict a = static_cast<const int16_t*>(a_);
  const int16_t* __restrict b = static_cast<const int16_t*>(b_);
  int32x4_t acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = e.first ? vdupq_n_s32(e.row_init ? e.row_init[r] : 0) : vld1q_s32(e.partial + r * NR + v * 4);

  for (size_t g = 0; g < kg; ++g) {
    int16x8_t b0[NB], b1[NB], av[NA];
#pragma GCC unroll 2
    for (int j = 0; j < NB; ++j) {
      b0[j] = vld1q_s16(b + j * 8);
      b1[j] = vld1q_s16(b + NR + j * 8);
    }
#pragma GCC unroll 2
    for (int i = 0; i < NA; ++i) {
      if (i < 2 * MR / 8) av[i] = vld1q_s16(a + 8 * i);
      else av[i] = load_s16_partial<(2 * MR) % 8 == 0 ? 8 : (2 * MR) % 8>(a + 8 * i);
    }
    smlal_rows<MR, NR>(acc, b0, b1, av, std::make_integer_sequence<int, MR>());
    a += 2 * MR;
    b += 2 * NR;
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

// Packs kg pairs of an NR-pixel panel as int16 (x - zp_x), k-major within a pair:
// b[(2g + i) * NR + j] = x[koff[2g + i] + pixel j] - zp_x.
template <int NR>
void qu8_pack_i16__neon(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff, const Qu8Im2colRun* runs,
                        size_t nruns, size_t stride, size_t nr, uint8_t zp_x, void* b_) {
  int16_t* b = static_cast<int16_t*>(b_);
  const uint8x8_t zp = vdup_n_u8(zp_x);
  const bool direct = nruns == 1 && runs[0].len == NR && stride == 1;  // one contiguous run: load in place
  uint8_t t[NR + 32];
  for (size_t k = 0; k < 2 * kg; ++k) {
    const uint8_t* row = t;
    if (direct) row = x + koff[k] + runs[0].src;
    else ::lowbit::qu8_gather_row_neon(x, avail, koff[k], runs, nruns, stride, NR, zp_x, t);
    // usubl wraps modulo 2^16: read as int16, x - zp_x in [-255, 255] is exact.
#pragma GCC unroll 2
    for (int v = 0; v < NR / 8; ++v) vst1q_s16(b + v * 8, vreinterpretq_s16_u16(vsubl_u8(vld1_u8(row + v * 8), zp)));
    b += NR;
  }
}

}  // namespace

const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_neon() {
  static const Qu8GemmKernels ks = [] {
    Qu8GemmKernels k;
    k.isa = "neon";
    k.mr = 6;
    k.kg = 2;
    k.widened = true;
    k.nr = 16;
    k.nr_tail = 8;
    k.kc_max = 512;
    k.main[1] = qu8_gemm_tile__neon<1, 16>;
    k.main[2] = qu8_gemm_tile__neon<2, 16>;
    k.main[3] = qu8_gemm_tile__neon<3, 16>;
    k.main[4] = qu8_gemm_tile__neon<4, 16>;
    k.main[5] = qu8_gemm_tile__neon<5, 16>;
    k.main[6] = qu8_gemm_tile__neon<6, 16>;
    k.tail[1] = qu8_gemm_tile__neon<1, 8>;
    k.tail[2] = qu8_gemm_tile__neon<2, 8>;
    k.tail[3] = qu8_gemm_tile__neon<3, 8>;
    k.tail[4] = qu8_gemm_tile__neon<4, 8>;
    k.tail[5] = qu8_gemm_tile__neon<5, 8>;
    k.tail[6] = qu8_gemm_tile__neon<6, 8>;
    k.pack = qu8_pack_i16__neon<16>;
    k.pack_tail = qu8_pack_i16__neon<8>;
    k.group_fma = qu8_group_fma__neon;
    k.group_finish = qu8_group_finish__neon;
    return k;
  }();
  return ks;
}

}  // namespace LOWBIT_KERNEL_NS
