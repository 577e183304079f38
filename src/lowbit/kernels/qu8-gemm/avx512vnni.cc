// AVX-512 VNNI qu8 GEMM: vpdpbusd multiplies u8 activations by s8 weights and adds groups of four
// products into int32 lanes without saturation, so it is exact for the full u8 x s8 range. The
// zero point of x is handled by starting the accumulators at -zp_x * sum_k w (row_init).
//
// Tile MR x 16: one zmm accumulator per channel row (16 pixels x 4 k per B vector); per k group
// one B load and MR broadcast weight words, which the compiler folds into vpdpbusd's {1to16}
// memory operand. MR x 8 tails use the ymm form (AVX512VL).
// GCC 12's AVX-512 headers initialise "undefined" vectors with themselves (GCC PR 105593), which
// -Wmaybe-uninitialized reports wherever they are inlined.
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the shared helpers use its intrinsics.
#include "lowbit/kernels/qu8-gemm/qu8_ukernel_inl.h"
#include "lowbit/kernels/qsub-gemm/qsub_panel.h"
#include "lowbit/kernels/qu8-gemm/qu8_group_inl.h"
#include "lowbit/kernels/qu8-gemm/qu8_zmm_inl.h"

#include <cstring>
#include <utility>

namespace LOWBIT_KERNEL_NS {
namespace {

// Group-wise weight scales folded in per K block (kernels/qu8-gemm/qu8_group_inl.h).
LOWBIT_GROUP_EPILOGUE(qu8, avx512vnni)

// 4- and 2-bit weight panels expanded per tile (kernels/qsub-gemm/qsub_panel.h).
LOWBIT_SUBBYTE_EXPANDERS(avx512vnni)

using ::lowbit::Qu8GemmEpilogue;
using ::lowbit::Qu8GemmKernels;
using ::lowbit::Qu8Im2colRun;

#ifndef LOWBIT_USE_SIMDE
// One panel row of NR = 16 or 32 pixels: each run is one fault-suppressing masked byte load (stride
// 2: a masked load of the even bytes of twice the width, narrowed by vpmovwb), so the rows need
// neither blends nor bounds checks.
template <int NR>
struct GatherVec;
template <>
struct GatherVec<16> {
  using type = __m128i;
};
template <>
struct GatherVec<32> {
  using type = __m256i;
};
template <>
struct GatherVec<48> {
  using type = __m512i;
};

// Bits [a, b) of a 64-bit mask (0 <= a <= b <= 64).
inline uint64_t bit_range(uint64_t a, uint64_t b) {
  const uint64_t below_b = b >= 64 ? ~uint64_t{0} : (uint64_t{1} << b) - 1;
  return below_b & ~((uint64_t{1} << a) - 1);
}
constexpr uint64_t kEvenBits = 0x5555555555555555ull;

template <int NR>
class RowGatherMasked {
 public:
  using Vec = typename GatherVec<NR>::type;
  RowGatherMasked(const Qu8Im2colRun* runs, size_t nruns, size_t stride, uint8_t zp) : stride_(stride), nruns_(nruns) {
    if constexpr (NR == 16) zp_ = _mm_set1_epi8(static_cast<char>(zp));
    else if constexpr (NR == 32) zp_ = _mm256_set1_epi8(static_cast<char>(zp));
    else zp_ = _mm512_set1_epi8(static_cast<char>(zp));
    ok_ = (stride == 1 || stride == 2) && nruns <= static_cast<size_t>(NR);
    if (!ok_) return;
    for (size_t s = 0; s < nruns; ++s) {
      const uint64_t dst = static_cast<uint64_t>(runs[s].dst), len = static_cast<uint64_t>(runs[s].len);
      pix_[s] = ((uint64_t{1} << len) - 1) << dst;
      base_[s] = runs[s].src - static_cast<int64_t>(dst) * static_cast<int64_t>(stride);
      // Stride 2: source bytes 2j of pixels j (0-31; 32-47 from byte 64 on), without a loop: the
      // driver builds gathers per tap and K block, several per panel.
      const uint64_t end = dst + len, lo_end = std::min<uint64_t>(end, 32), hi_dst = std::max<uint64_t>(dst, 32);
      even_[s] = dst < 32 ? bit_range(2 * dst, 2 * lo_end) & kEvenBits : 0;
      even_hi_[s] = end > 32 ? bit_range(2 * (hi_dst - 32), 2 * (end - 32)) & kEvenBits : 0;
    }
  }
  bool ok() const { return ok_; }
  Vec row(const uint8_t* x, int64_t koff) const {
    Vec v = zp_;
    const uint8_t* xk = x + koff;
    for (size_t s = 0; s < nruns_; ++s) {
      const uint8_t* p = xk + base_[s];
      if constexpr (NR == 16) {
        const __mmask16 pix = static_cast<__mmask16>(pix_[s]);
        v = stride_ == 1 ? _mm_mask_loadu_epi8(v, pix, p)
                         : _mm_mask_mov_epi8(v, pix, _mm256_cvtepi16_epi8(_mm256_maskz_loadu_epi8(
                                                         static_cast<__mmask32>(even_[s]), p)));
      } else if constexpr (NR == 32) {
        const __mmask32 pix = static_cast<__mmask32>(pix_[s]);
        v = stride_ == 1 ? _mm256_mask_loadu_epi8(v, pix, p)
                         : _mm256_mask_mov_epi8(v, pix, _mm512_cvtepi16_epi8(_mm512_maskz_loadu_epi8(even_[s], p)));
      } else if (stride_ == 1) {
        v = _mm512_mask_loadu_epi8(v, pix_[s], p);
      } else {
        const __m256i lo = _mm512_cvtepi16_epi8(_mm512_maskz_loadu_epi8(even_[s], p));
        const __m128i hi = _mm256_cvtepi16_epi8(_mm256_maskz_loadu_epi8(static_cast<__mmask32>(even_hi_[s]), p + 64));
        v = _mm512_mask_mov_epi8(v, pix_[s], _mm512_inserti32x4(_mm512_castsi256_si512(lo), hi, 2));
      }
    }
    return v;
  }

 private:
  size_t stride_, nruns_;
  bool ok_ = false;
  Vec zp_;
  uint64_t pix_[NR], even_[NR], even_hi_[NR];
  int64_t base_[NR];
};

// Four 16-byte rows, row i in 128-bit lane i of z, interleaved into the VNNI layout (16 pixels x
// 4 k): vpermd puts pixel quad L of every row in lane L, vpshufb transposes each 4x4 byte block.
struct QuadInterleave {
  const __m512i quads = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i bytes = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  __m512i operator()(__m512i z) const { return _mm512_shuffle_epi8(_mm512_permutexvar_epi32(quads, z), bytes); }
};

// The 16-pixel im2col packer with AVX-512BW: the rows of a k group through RowGatherMasked, then
// interleaved in one zmm (vpermd puts pixel quad L of every row in lane L, vpshufb transposes each
// 4x4 byte block) instead of eight unpacks. Same layout as pack_u8x4: b[(g*16 + j)*4 + i].
void pack_u8x4_16__avx512(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff, const Qu8Im2colRun* runs,
                          size_t nruns, size_t stride, uint8_t zp_x, void* b_) {
  const RowGatherMasked<16> gather(runs, nruns, stride, zp_x);
  if (!gather.ok()) {
    pack_u8x4<16>(kg, x, avail, koff, runs, nruns, stride, 16, zp_x, b_);
    return;
  }
  __m512i* b = static_cast<__m512i*>(b_);
  const QuadInterleave quad{};
  for (size_t g = 0; g < kg; ++g) {
    __m512i z = _mm512_castsi128_si512(gather.row(x, koff[4 * g]));
    z = _mm512_inserti32x4(z, gather.row(x, koff[4 * g + 1]), 1);
    z = _mm512_inserti32x4(z, gather.row(x, koff[4 * g + 2]), 2);
    z = _mm512_inserti32x4(z, gather.row(x, koff[4 * g + 3]), 3);
    _mm512_store_si512(b++, quad(z));
  }
}
#endif

// Portable 32- and 48-pixel packer (the SIMDe build, and strides other than 1 and 2): each row
// through qu8_gather_row, then interleaved byte by byte.
template <int NR>
void pack_u8x4_generic(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff, const Qu8Im2colRun* runs,
                       size_t nruns, size_t stride, uint8_t zp_x, void* b_) {
  uint8_t* b = static_cast<uint8_t*>(b_);
  alignas(16) uint8_t t[4][NR + 32];
  for (size_t g = 0; g < kg; ++g) {
    for (int i = 0; i < 4; ++i) qu8_gather_row(x, avail, koff[4 * g + i], runs, nruns, stride, NR, zp_x, t[i]);
    for (int j = 0; j < NR; ++j)
      for (int i = 0; i < 4; ++i) b[(g * NR + j) * 4 + i] = t[i][j];
  }
}

#ifndef LOWBIT_USE_SIMDE
// The same on 32 and 48 pixels: NR / 16 zmm per k group, output vector c holding pixels
// 16c..16c+15 of the group's four rows.
template <int NR>
void pack_u8x4_wide__avx512(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff, const Qu8Im2colRun* runs,
                            size_t nruns, size_t stride, uint8_t zp_x, void* b_) {
  const RowGatherMasked<NR> gather(runs, nruns, stride, zp_x);
  if (!gather.ok()) {
    pack_u8x4_generic<NR>(kg, x, avail, koff, runs, nruns, stride, zp_x, b_);
    return;
  }
  __m512i* b = static_cast<__m512i*>(b_);
  const QuadInterleave quad{};
  for (size_t g = 0; g < kg; ++g) {
    const auto r0 = gather.row(x, koff[4 * g]), r1 = gather.row(x, koff[4 * g + 1]);
    const auto r2 = gather.row(x, koff[4 * g + 2]), r3 = gather.row(x, koff[4 * g + 3]);
    if constexpr (NR == 32) {
      // Rows are ymm: [r0 | r1] and [r2 | r3], then the low and the high 16 pixels of each row.
      const __m512i r01 = _mm512_inserti64x4(_mm512_castsi256_si512(r0), r1, 1);
      const __m512i r23 = _mm512_inserti64x4(_mm512_castsi256_si512(r2), r3, 1);
      _mm512_store_si512(b++, quad(_mm512_shuffle_i64x2(r01, r23, 0x88)));  // r0.lo r1.lo r2.lo r3.lo
      _mm512_store_si512(b++, quad(_mm512_shuffle_i64x2(r01, r23, 0xDD)));  // r0.hi r1.hi r2.hi r3.hi
    } else {
      // Rows are zmm (48 of 64 bytes): [r0.c r0.c r1.c r1.c] and [r2.c r2.c r3.c r3.c] for lane c,
      // then lanes 0 and 2 of each: [r0.c r1.c r2.c r3.c].
      _mm512_store_si512(b++, quad(_mm512_shuffle_i64x2(_mm512_shuffle_i64x2(r0, r1, 0x00),
                                                        _mm512_shuffle_i64x2(r2, r3, 0x00), 0x88)));
      _mm512_store_si512(b++, quad(_mm512_shuffle_i64x2(_mm512_shuffle_i64x2(r0, r1, 0x55),
                                                        _mm512_shuffle_i64x2(r2, r3, 0x55), 0x88)));
      _mm512_store_si512(b++, quad(_mm512_shuffle_i64x2(_mm512_shuffle_i64x2(r0, r1, 0xAA),
                                                        _mm512_shuffle_i64x2(r2, r3, 0xAA), 0x88)));
    }
  }
}
#endif

template <int NR>
void qu8_pack_u8x4_wide__avx512vnni(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff,
                                    const Qu8Im2colRun* runs, size_t nruns, size_t stride, size_t nr, uint8_t zp_x,
                                    void* b) {
#ifndef LOWBIT_USE_SIMDE
  pack_u8x4_wide__avx512<NR>(kg, x, avail, koff, runs, nruns, stride, zp_x, b);
#else
  pack_u8x4_generic<NR>(kg, x, avail, koff, runs, nruns, stride, zp_x, b);
#endif
}

template <int NR>
void qu8_pack_u8x4__avx512vnni(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff,
                               const Qu8Im2colRun* runs, size_t nruns, size_t stride, size_t nr, uint8_t zp_x,
                               void* b) {
#ifndef LOWBIT_USE_SIMDE  // (SIMDe 0.7 lacks the masked loads: that build keeps the SSE gather)
  if constexpr (NR == 16) {
    pack_u8x4_16__avx512(kg, x, avail, koff, runs, nruns, stride, zp_x, b);
    return;
  }
#endif
  pack_u8x4<NR>(kg, x, avail, koff, runs, nruns, stride, nr, zp_x, b);
}

// Weight words (Qu8GemmKernels::weight_bits WB): 8 = one k group of 4 int8 weights per word; 4 or
// 2 = S = 8 / WB k groups per word, group q in bits [8 - WB (q + 1), 8 - WB q) of each byte. Shifted
// to the top of the byte and masked, code w reads as the int8 2^(8 - WB) w, exactly: the 4- and
// 2-bit weights are unpacked in registers, one and or a shift and an and per broadcast word, and
// the driver scales row_init and the requantization scale to match (kernels/qsub-gemm/README.md).
template <int WB, class V>
[[gnu::always_inline]] inline V weight_group(V w, int q) {
  if constexpr (WB == 8) {
    return w;
  } else if constexpr (sizeof(V) == 64) {
    const __m512i top = _mm512_set1_epi8(static_cast<char>(0xFF << (8 - WB)));
    return _mm512_and_si512(q ? _mm512_slli_epi32(w, WB * q) : w, top);
  } else {
    const __m256i top = _mm256_set1_epi8(static_cast<char>(0xFF << (8 - WB)));
    return _mm256_and_si256(q ? _mm256_slli_epi32(w, WB * q) : w, top);
  }
}

// Runs body(q, words) for the S k groups of each weight word: full words, then a last word of
// kg % S groups. `words` (a's MR words) advances by MR per word; body advances b per group.
template <int WB, int MR, class Body>
[[gnu::always_inline]] inline void for_each_weight_word(size_t kg, const int32_t* __restrict a, Body&& body) {
  constexpr int S = 8 / WB;
  size_t k = 0;
  for (; k + S <= kg; k += S) {
    #pragma GCC unroll 4
    for (int q = 0; q < S; ++q) body(q, a);
    a += MR;
  }
  if constexpr (S > 1)
    if (k < kg) {
      for (int q = 0; q < static_cast<int>(kg - k); ++q) body(q, a);
      a += MR;
    }
}

template <int MR, int WB = 8>
void qu8_gemm_tile16__avx512vnni(size_t nc, size_t kg, const void* a_, const void* b_, uint8_t* c, size_t ldc,
                                 const Qu8GemmEpilogue& e) {
  const int32_t* __restrict a = static_cast<const int32_t*>(a_);
  const __m512i* __restrict b = static_cast<const __m512i*>(b_);
  __m512i acc[MR];
  #pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
    acc[r] = e.first ? (e.row_init ? _mm512_set1_epi32(e.row_init[r]) : _mm512_setzero_si512())
                     : _mm512_loadu_si512(e.partial + r * 16);
  for_each_weight_word<WB, MR>(kg, a, [&](int q, const int32_t* w) {
    const __m512i bv = _mm512_load_si512(b);
    #pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
      acc[r] = _mm512_dpbusd_epi32(acc[r], bv, weight_group<WB>(_mm512_set1_epi32(w[r]), q));
    b += 1;
  });
  if (!e.last) {
    #pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) _mm512_storeu_si512(e.partial + r * 16, acc[r]);
    return;
  }
  const ZmmRequant q(e);
  #pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) requant_store_row_zmm(acc[r], nc, r, c + r * ldc, q);
}

// Tile MR x 16 NV (MR <= 8; NV = 2 or 3): NV zmm accumulators per row, so a k group costs NV B
// loads and MR broadcasts for NV MR vpdpbusd. The 16 x 16 tile needs 17 loads for 16 vpdpbusd,
// more than the load ports sustain next to two vpdpbusd per cycle; 8 x 32 needs 10 for 16 and
// 8 x 48 11 for 24 (qu8_peak: ~99% of the vpdpbusd peak in the loop against ~93%). 8 x 48 also
// reads the weights once per 48 pixels: ResNet's 7 x 7 maps (48 + 1) pass over them twice
// instead of four times (16 x 16: 3 panels + 1).
template <int MR, int NV, int WB = 8>
void qu8_gemm_wide__avx512vnni(size_t nc, size_t kg, const void* a_, const void* b_, uint8_t* c, size_t ldc,
                               const Qu8GemmEpilogue& e) {
  constexpr int NR = 16 * NV;
  const int32_t* __restrict a = static_cast<const int32_t*>(a_);
  const __m512i* __restrict b = static_cast<const __m512i*>(b_);
  __m512i acc[MR][NV];
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
    #pragma GCC unroll 3
    for (int v = 0; v < NV; ++v)
      acc[r][v] = e.first ? (e.row_init ? _mm512_set1_epi32(e.row_init[r]) : _mm512_setzero_si512())
                          : _mm512_loadu_si512(e.partial + r * NR + v * 16);
  for_each_weight_word<WB, MR>(kg, a, [&](int q, const int32_t* w) {
    __m512i bv[NV];
    #pragma GCC unroll 3
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_load_si512(b + v);
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512i av = weight_group<WB>(_mm512_set1_epi32(w[r]), q);
      #pragma GCC unroll 3
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], bv[v], av);
    }
    b += NV;
  });
  if (!e.last) {
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
      #pragma GCC unroll 3
      for (int v = 0; v < NV; ++v) _mm512_storeu_si512(e.partial + r * NR + v * 16, acc[r][v]);
    return;
  }
  const ZmmRequant q(e);
  size_t ncv[NV];
  #pragma GCC unroll 3
  for (int v = 0; v < NV; ++v) {
    const size_t lo = static_cast<size_t>(16 * v);
    ncv[v] = nc <= lo ? 0 : std::min<size_t>(16, nc - lo);
  }
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    requant_store_row_zmm(acc[r][0], ncv[0], r, c + r * ldc, q);
    #pragma GCC unroll 3
    for (int v = 1; v < NV; ++v)
      if (ncv[v]) requant_store_row_zmm(acc[r][v], ncv[v], r, c + r * ldc + 16 * v, ZmmRequant::shifted(q, 16 * v));
  }
}

template <int MR, int WB = 8>
void qu8_gemm_tile8__avx512vnni(size_t nc, size_t kg, const void* a_, const void* b_, uint8_t* c, size_t ldc,
                                const Qu8GemmEpilogue& e) {
  const int32_t* __restrict a = static_cast<const int32_t*>(a_);
  const __m256i* __restrict b = static_cast<const __m256i*>(b_);
  __m256i acc[MR][1];
  #pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
    acc[r][0] = e.first ? (e.row_init ? _mm256_set1_epi32(e.row_init[r]) : _mm256_setzero_si256())
                        : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.partial + r * 8));
  for_each_weight_word<WB, MR>(kg, a, [&](int q, const int32_t* w) {
    const __m256i bv = _mm256_load_si256(b);
    #pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
      acc[r][0] = _mm256_dpbusd_epi32(acc[r][0], bv, weight_group<WB>(_mm256_set1_epi32(w[r]), q));
    b += 1;
  });
  if (!e.last) {
    #pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) _mm256_storeu_si256(reinterpret_cast<__m256i*>(e.partial + r * 8), acc[r][0]);
    return;
  }
  const YmmRequant q(e);
  #pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) requant_store_row<8>(acc[r], nc, r, c + r * ldc, q);
}

// Channels in lanes (Qu8GemmKernels::narrow) for a panel of NP <= 4 pixels packed 8 wide:
// acc[j] holds pixel j of the MR rows in lanes 0..MR-1 (the masked weight load zeroes the rest),
// each k group one weight-vector load and, per pixel, one vpdpbusd with the pixel's 4 activations
// broadcast. U accumulators per pixel over alternate k groups hide the vpdpbusd latency: two issue
// per cycle, each waits ~4 cycles for its predecessor, so 8 chains keep the pipes busy (with 4,
// the 1-pixel tail of a 7 x 7 map ran at ~1/3 of the tiles' rate per pixel). Their int32 sum
// wraps like one accumulator would. e.partial holds NP x 16 words.
template <int MR, int NP, int BS, int WB>
[[gnu::always_inline]] inline void narrow_body(size_t kg, const int32_t* a, const int32_t* b, uint8_t* c, size_t ldc,
                                               const Qu8GemmEpilogue& e) {
  constexpr int S = 8 / WB;  // k groups per weight word (weight_group)
  constexpr __mmask16 rows = static_cast<__mmask16>((1u << MR) - 1);
  // A multiple of S, so that each round starts a weight word.
  constexpr int U = ((8 + NP - 1) / NP + S - 1) / S * S;
  // Every loop over acc is unrolled: one indexed at run time makes GCC keep acc in memory and
  // store each accumulator after every vpdpbusd.
  __m512i acc[NP][U];
  #pragma GCC unroll 4
  for (int j = 0; j < NP; ++j) {
    acc[j][0] = e.first ? (e.row_init ? zmaskz_loadu_epi32(rows, e.row_init) : _mm512_setzero_si512())
                        : _mm512_loadu_si512(e.partial + j * 16);
    #pragma GCC unroll 8
    for (int u = 1; u < U; ++u) acc[j][u] = _mm512_setzero_si512();
  }
  // Group k's weights: word k / S of each row, its group k % S (U is a multiple of S: 8, 4 or 2
  // groups per round, so q is a constant in the unrolled loop).
  size_t k = 0;
  for (; k + U <= kg; k += U)
    #pragma GCC unroll 8
    for (int u = 0; u < U; ++u) {
      const __m512i av = weight_group<WB>(zmaskz_loadu_epi32(rows, a + (k + u) / S * MR), u % S);
      #pragma GCC unroll 4
      for (int j = 0; j < NP; ++j)
        acc[j][u] = _mm512_dpbusd_epi32(acc[j][u], _mm512_set1_epi32(b[(k + u) * BS + j]), av);
    }
  for (; k < kg; ++k) {
    const __m512i av = weight_group<WB>(zmaskz_loadu_epi32(rows, a + k / S * MR), static_cast<int>(k % S));
    #pragma GCC unroll 4
    for (int j = 0; j < NP; ++j) acc[j][0] = _mm512_dpbusd_epi32(acc[j][0], _mm512_set1_epi32(b[k * BS + j]), av);
  }
  __m512i sums[NP];
  #pragma GCC unroll 4
  for (int j = 0; j < NP; ++j) {
    sums[j] = acc[j][0];
    #pragma GCC unroll 8
    for (int u = 1; u < U; ++u) sums[j] = _mm512_add_epi32(sums[j], acc[j][u]);
  }
  for (int j = 0; j < NP; ++j) {
    const __m512i sum = sums[j];
    if (!e.last) {
      _mm512_storeu_si512(e.partial + j * 16, sum);
      continue;
    }
    // The contract per row, rows in lanes: per-row scale and bias are vectors here.
    __m512 t = _mm512_fmadd_ps(zcvtepi32_ps(sum), zmaskz_loadu_ps(rows, e.scale),
                               zmaskz_loadu_ps(rows, e.bias));
    if (e.res) {
      alignas(64) int32_t rv[16] = {};
      for (int r = 0; r < MR; ++r) rv[r] = e.res[r * e.ld_res + j];
      t = _mm512_fmadd_ps(zcvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(rv), _mm512_set1_epi32(e.res_zp))),
                          _mm512_set1_ps(e.res_scale), t);
    }
    t = _mm512_min_ps(_mm512_max_ps(t, _mm512_set1_ps(e.qmin)), _mm512_set1_ps(e.qmax));
    alignas(64) int32_t q[16];
    _mm512_store_si512(q, _mm512_add_epi32(zcvtps_epi32(t), _mm512_set1_epi32(e.zp_y)));
    for (int r = 0; r < MR; ++r) c[r * ldc + j] = static_cast<uint8_t>(q[r]);
  }
}

// BS: the tail panel's width (8 in the 16 x 16 set, 16 in the 8 x 32 set).
template <int MR, int BS, int WB = 8>
void qu8_gemm_narrow__avx512vnni(size_t nc, size_t kg, const void* a_, const void* b_, uint8_t* c, size_t ldc,
                                 const Qu8GemmEpilogue& e) {
  const int32_t* a = static_cast<const int32_t*>(a_);
  const int32_t* b = static_cast<const int32_t*>(b_);
  switch (nc) {
    case 1: narrow_body<MR, 1, BS, WB>(kg, a, b, c, ldc, e); break;
    case 2: narrow_body<MR, 2, BS, WB>(kg, a, b, c, ldc, e); break;
    case 3: narrow_body<MR, 3, BS, WB>(kg, a, b, c, ldc, e); break;
    default: narrow_body<MR, 4, BS, WB>(kg, a, b, c, ldc, e); break;
  }
}

template <int WB, int... MRs>
void fill(Qu8GemmKernels& k, std::integer_sequence<int, MRs...>) {
  ((k.main[MRs + 1] = qu8_gemm_tile16__avx512vnni<MRs + 1, WB>,
    k.tail[MRs + 1] = qu8_gemm_tile8__avx512vnni<MRs + 1, WB>,
    k.narrow[MRs + 1] = qu8_gemm_narrow__avx512vnni<MRs + 1, 8, WB>),
   ...);
}

template <int NV, int WB, int... MRs>
void fill_wide(Qu8GemmKernels& k, std::integer_sequence<int, MRs...>) {
  ((k.main[MRs + 1] = qu8_gemm_wide__avx512vnni<MRs + 1, NV, WB>,
    k.tail[MRs + 1] = qu8_gemm_tile16__avx512vnni<MRs + 1, WB>,
    k.narrow[MRs + 1] = qu8_gemm_narrow__avx512vnni<MRs + 1, 16, WB>),
   ...);
}

}  // namespace

namespace {
// The 8 x 16 NV sets: 16-pixel tails, 1-4-pixel narrow panels; kc_max 512 keeps the 16 NV KB B
// panel in L1. WB: bits per weight code in the words (weight_group).
template <int NV, int WB>
Qu8GemmKernels wide_set(::lowbit::Qu8Im2colPack pack) {
  Qu8GemmKernels k;
  k.isa = "avx512vnni";
  k.mr = 8;
  k.kg = 4;
  k.widened = false;
  k.weight_bits = WB;
  k.nr = 16 * NV;
  k.nr_tail = 16;
  k.kc_max = 512;
  k.narrow_max = 4;
  fill_wide<NV, WB>(k, std::make_integer_sequence<int, 8>{});
  k.pack = pack;
  k.pack_tail = qu8_pack_u8x4__avx512vnni<16>;
  k.group_fma = qu8_group_fma__avx512vnni;
  k.group_finish = qu8_group_finish__avx512vnni;
  k.expand4 = qsub_expand_w4__avx512vnni;
  k.expand2 = qsub_expand_w2__avx512vnni;
  return k;
}

template <int WB>
Qu8GemmKernels set_16x16() {
  Qu8GemmKernels k;
  k.isa = "avx512vnni";
  k.mr = 16;
  k.kg = 4;
  k.widened = false;
  k.weight_bits = WB;
  k.nr = 16;
  k.nr_tail = 8;
  k.kc_max = 512;  // as the 8 x 32 set: 8 KB of B, measured ~2% faster on stage 4 than 1024
  k.narrow_max = 4;
  fill<WB>(k, std::make_integer_sequence<int, 16>{});
  k.pack = qu8_pack_u8x4__avx512vnni<16>;
  k.pack_tail = qu8_pack_u8x4__avx512vnni<8>;
  k.group_fma = qu8_group_fma__avx512vnni;
  k.group_finish = qu8_group_finish__avx512vnni;
  k.expand4 = qsub_expand_w4__avx512vnni;
  k.expand2 = qsub_expand_w2__avx512vnni;
  return k;
}

const Qu8GemmKernels& by_bits(int bits, const Qu8GemmKernels& k8, const Qu8GemmKernels& k4, const Qu8GemmKernels& k2) {
  return bits == 4 ? k4 : bits == 2 ? k2 : k8;
}
}  // namespace

const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_avx512vnni_8x48(int weight_bits) {
  static const Qu8GemmKernels k8 = wide_set<3, 8>(qu8_pack_u8x4_wide__avx512vnni<48>),
                              k4 = wide_set<3, 4>(qu8_pack_u8x4_wide__avx512vnni<48>),
                              k2 = wide_set<3, 2>(qu8_pack_u8x4_wide__avx512vnni<48>);
  return by_bits(weight_bits, k8, k4, k2);
}

const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_avx512vnni_8x32(int weight_bits) {
  static const Qu8GemmKernels k8 = wide_set<2, 8>(qu8_pack_u8x4_wide__avx512vnni<32>),
                              k4 = wide_set<2, 4>(qu8_pack_u8x4_wide__avx512vnni<32>),
                              k2 = wide_set<2, 2>(qu8_pack_u8x4_wide__avx512vnni<32>);
  return by_bits(weight_bits, k8, k4, k2);
}

const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_avx512vnni() {
  static const Qu8GemmKernels k = set_16x16<8>();
  return k;
}

}  // namespace LOWBIT_KERNEL_NS
