#pragma once
// The one binary micro-kernel, written once over an ISA traits type V (each ISA's file supplies V
// and instantiates it; included by those files only, after their intrinsics header):
//   V::Vec      kLanes uint64 words (one per pixel)
//   V::Acc      an accumulator of popcounts, exact for kSpan words before flush()
//   load(p)     kLanes words of b (aligned)       bcast(w)  one weight word in every lane
//   zero()      an empty accumulator               count(acc, x)  acc + popcount of x's lanes
//   flush(acc, t, first)  t[0..kLanes) = (first ? 0 : t) + the lanes' totals
// Byte-wise counters (AVX2 vpshufb, NEON cnt) hold at most 8 per k step per byte, so 31 steps
// (248 <= 255) are exact before the widening flush; 64-bit counters (vpopcntq, scalar popcnt)
// never need one mid-way.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "lowbit/kernels/qb1-gemm/qb1_gemm.h"

namespace LOWBIT_KERNEL_NS {
namespace qb1 {
// Internal linkage: every ISA file compiles its own copy with its own flags. With external linkage
// the linker kept one gemm_tile<ScalarWords, ...> for all files, so the portable set ran the
// popcnt instructions of the AVX2 file's copy (an ODR violation that a CPU without popcnt would
// have faulted on).
namespace {

// A word's popcount: the instruction where the file's flags have one (AArch64 cnt on a d register,
// x86 with popcnt); x86-64 baseline has none and std::popcount there is a call to libgcc's
// __popcountdi2 (the portable set ran at 0.2x of int8 through it), so SWAR bit slicing inline.
inline uint64_t popcount64(uint64_t x) {
#if defined(__x86_64__) && !defined(__POPCNT__)
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (x * 0x0101010101010101ull) >> 56;
#else
  return static_cast<uint64_t>(std::popcount(x));
#endif
}

// One word per "vector".
struct ScalarWords {
  using Vec = uint64_t;
  using Acc = uint64_t;
  static constexpr int kLanes = 1;
  static constexpr size_t kSpan = std::numeric_limits<size_t>::max();
  static Vec load(const uint64_t* p) { return *p; }
  static Vec bcast(uint64_t w) { return w; }
  static Vec vxor(Vec a, Vec b) { return a ^ b; }
  static Acc zero() { return 0; }
  static Acc count(Acc acc, Vec x) { return acc + popcount64(x); }
  static void flush(Acc acc, uint64_t* t, bool first) { t[0] = (first ? 0 : t[0]) + acc; }
};

// Traits with kSplitA (AVX2) read split words on both sides (Qb1GemmKernels::split_nibbles):
// each weight word as its low and high nibbles, and the pixel panel as, per k, NR low-nibble
// words then NR high-nibble words (the driver splits the panel once for all M / MR tiles). They
// supply
//   count2(acc, a_lo, a_hi, b_lo, b_hi)  acc + popcount(a ^ b) of 4 words from their halves,
//                                        b_lo / b_hi pointers to the pixels' halves
template <class V>
constexpr bool splits_a() {
  if constexpr (requires { V::kSplitA; }) return V::kSplitA;
  else return false;
}

// Traits may store a finished tile row straight from the accumulator:
//   store_c(acc, ktot, c)  c[0..kLanes) = ktot - 2 * (lanes' totals of acc), one span only.
// Without it (or past one span) the totals go through memory and a scalar loop; on ResNet-18's
// 64-channel layers (9 words per pixel, one span) that loop and its 8 stores cost as much as a
// third of the tile's k loop.
template <class V>
constexpr bool stores_c() {
  return requires(typename V::Acc a, int32_t* c) { V::store_c(a, int32_t{0}, c); };
}

// kn k steps of an MR x NR tile into acc (at most V::kSpan: the counters stay exact).
template <class V, int MR, int NR>
[[gnu::always_inline]] inline void k_steps(size_t kn, const uint64_t*& a, const uint64_t*& b,
                                           typename V::Acc (&acc)[MR][NR / V::kLanes]) {
  constexpr int NV = NR / V::kLanes;
  #pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
    #pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = V::zero();
  if constexpr (splits_a<V>()) {
    for (size_t k = 0; k < kn; ++k) {
      #pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const typename V::Vec lo = V::bcast(a[2 * r]), hi = V::bcast(a[2 * r + 1]);
        #pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
          acc[r][v] = V::count2(acc[r][v], lo, hi, b + v * V::kLanes, b + NR + v * V::kLanes);
      }
      a += 2 * MR;
      b += 2 * NR;
    }
  } else {
    for (size_t k = 0; k < kn; ++k) {
      typename V::Vec bv[NV];
      #pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) bv[v] = V::load(b + v * V::kLanes);
      #pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const typename V::Vec av = V::bcast(a[r]);
        #pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = V::count(acc[r][v], V::vxor(av, bv[v]));
      }
      a += MR;
      b += NR;
    }
  }
}

// The general tile: spans of V::kSpan steps flushed into 64-bit totals, any nc.
template <class V, int MR, int NR>
[[gnu::noinline]] void gemm_tile_spans(size_t kw, const uint64_t* a, const uint64_t* b,
                                       int32_t ktot, int32_t* __restrict c, size_t ldc, size_t nc) {
  constexpr int NV = NR / V::kLanes;
  alignas(64) uint64_t tot[MR][NR];  // written by the first flush (a zero fill cost 9% as rep stos)
  size_t k0 = 0;
  do {  // at least once (kw >= 1): the first flush writes every total
    const size_t kn = kw - k0 < V::kSpan ? kw - k0 : V::kSpan;
    typename V::Acc acc[MR][NV];
    k_steps<V, MR, NR>(kn, a, b, acc);
    #pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
      #pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) V::flush(acc[r][v], &tot[r][v * V::kLanes], k0 == 0);
    k0 += kn;
  } while (k0 < kw);
  if (nc == static_cast<size_t>(NR)) {  // fixed trip count: vectorised
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) c[r * ldc + j] = ktot - 2 * static_cast<int32_t>(tot[r][j]);
    return;
  }
  for (int r = 0; r < MR; ++r)
    for (size_t j = 0; j < nc; ++j) c[r * ldc + j] = ktot - 2 * static_cast<int32_t>(tot[r][j]);
}

// One span and a full tile, where the traits can store from the accumulators, skips the totals:
// a separate, lean function (sharing one with the spans' path, GCC copied the uninitialised
// totals into spill slots on entry). ResNet-18's 64-channel layers are all this case (9 words).
template <class V, int MR, int NR>
void gemm_tile(size_t kw, const uint64_t* a, const uint64_t* b, int32_t ktot,
               int32_t* __restrict c, size_t ldc, size_t nc) {
  constexpr int NV = NR / V::kLanes;
  static_assert(NV * V::kLanes == NR, "NR must be a multiple of the vector's words");
  if constexpr (stores_c<V>()) {
    if (kw <= V::kSpan && nc == static_cast<size_t>(NR)) {
      typename V::Acc acc[MR][NV];
      k_steps<V, MR, NR>(kw, a, b, acc);
      #pragma GCC unroll 8
      for (int r = 0; r < MR; ++r)
        #pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) V::store_c(acc[r][v], ktot, c + r * ldc + v * V::kLanes);
      return;
    }
  }
  gemm_tile_spans<V, MR, NR>(kw, a, b, ktot, c, ldc, nc);
}

// Scalar loops the ISA's flags vectorise (qb1_gemm.h, Qb1PackU1 / Qb1RequantRow / ...).
// 8 channels x 8 pixels at a time: neg8(p) gives, for the 8 pixels p[0..8) of one channel, a word
// whose byte j is 1 where pixel j stands for -1; sum_c (neg8 << c) puts channel c at bit c of byte
// j: an 8 x 8 bit transpose in 8 shifts and ORs (the per-bit loop it replaced cost 0.2 ms on
// ResNet-18's 64 x 56 x 56 inputs, half of the conv itself). neg1(v) is the same for one pixel.
// Channels past C are never read and stay 0.
// Pixels [p_begin, p_end) only (threads split pixels: a 64-channel input has one word per pixel).
template <class T, class Neg8, class Neg1>
inline void pack_bits(const T* __restrict x, int64_t C, int64_t hw, int64_t cw, int64_t p_begin, int64_t p_end,
                      uint64_t* __restrict bits, Neg8 neg8, Neg1 neg1) {
  uint8_t* out = reinterpret_cast<uint8_t*>(bits);  // byte g of pixel i's word w: channels 64w + 8g ..
  for (int64_t w = 0; w < cw; ++w)
    for (int64_t g = 0; g < 8; ++g) {
      const int64_t c0 = w * 64 + g * 8;
      const int64_t nc = C - c0 < 8 ? (C - c0 > 0 ? C - c0 : 0) : 8;
      const size_t at = static_cast<size_t>(w * 8 + g);
      int64_t i = p_begin;
      for (; i + 8 <= p_end; i += 8) {
        uint64_t t = 0;
        for (int64_t c = 0; c < nc; ++c) t |= neg8(x + (c0 + c) * hw + i) << c;
        for (int j = 0; j < 8; ++j)
          out[static_cast<size_t>(i + j) * static_cast<size_t>(cw) * 8 + at] = static_cast<uint8_t>(t >> (8 * j));
      }
      for (; i < p_end; ++i) {
        uint8_t t = 0;
        for (int64_t c = 0; c < nc; ++c) t |= static_cast<uint8_t>(neg1(x[(c0 + c) * hw + i]) << c);
        out[static_cast<size_t>(i) * static_cast<size_t>(cw) * 8 + at] = t;
      }
    }
}

constexpr uint64_t kLowBytes = 0x0101010101010101ull, kHighBytes = 0x8080808080808080ull;

// u1 codes {0, 1}: -1 where the code is 0. Codes other than 0 / 1 cannot occur (validation);
// their low bit would count.
inline void pack_u1(const uint8_t* __restrict x, int64_t C, int64_t hw, int64_t cw, int64_t p_begin, int64_t p_end,
                    uint64_t* __restrict bits) {
  pack_bits(
      x, C, hw, cw, p_begin, p_end, bits,
      [](const uint8_t* p) {
        uint64_t v;
        __builtin_memcpy(&v, p, 8);
        return ~v & kLowBytes;
      },
      [](uint8_t v) { return static_cast<unsigned>(~v & 1u); });
}

// u8 codes: -1 where code < zp (the real value s * (code - zp) is negative). Bytewise unsigned
// x < z without crossing bytes: (x | 0x80) - (z & 0x7f) keeps each byte's borrow inside it, its
// high bit saying x_lo >= z_lo; x < z when z's high bit is set and x's not, or the high bits agree
// and x_lo < z_lo.
inline void pack_sign_u8(const uint8_t* __restrict x, int64_t C, int64_t hw, int64_t cw, int64_t p_begin,
                         int64_t p_end, uint8_t zp, uint64_t* __restrict bits) {
  const uint64_t z = kLowBytes * zp;
  pack_bits(
      x, C, hw, cw, p_begin, p_end, bits,
      [z](const uint8_t* p) {
        uint64_t v;
        __builtin_memcpy(&v, p, 8);
        const uint64_t d = (v | kHighBytes) - (z & ~kHighBytes);
        return (((~v & z) | (~(v ^ z) & ~d)) & kHighBytes) >> 7;
      },
      [zp](uint8_t v) { return static_cast<unsigned>(v < zp); });
}

// f32: -1 where x < 0 (-0 and NaN are +1, as the reference's sign).
inline void pack_sign_f32(const float* __restrict x, int64_t C, int64_t hw, int64_t cw, int64_t p_begin,
                          int64_t p_end, uint64_t* __restrict bits) {
  pack_bits(
      x, C, hw, cw, p_begin, p_end, bits,
      [](const float* p) {
        uint64_t r = 0;
        for (int j = 0; j < 8; ++j) r |= static_cast<uint64_t>(p[j] < 0.0f) << (8 * j);
        return r;
      },
      [](float v) { return static_cast<unsigned>(v < 0.0f); });
}

inline void epilogue_f32(const int32_t* __restrict acc, size_t n, const ::lowbit::Qb1EpilogueF32& e,
                         float* __restrict y) {
  for (size_t j = 0; j < n; ++j) {
    float v = __builtin_fmaf(static_cast<float>(acc[j]), e.alpha, e.bias);
    if (e.res) v += e.res[j];
    y[j] = std::min(std::max(v, e.lo), e.hi);
  }
}

// 8 pixels x 8 channels at a time, as pack_bits: byte jj of t holds the 8 channels' bits of pixel
// jj, then one byte store per pixel.
inline void signs_out(const int32_t* __restrict acc, size_t ldo, size_t n, int64_t M, const int32_t* __restrict thr,
                      uint64_t* __restrict out) {
  const int64_t cw = M / 64;
  uint8_t* ob = reinterpret_cast<uint8_t*>(out);
  for (size_t j0 = 0; j0 < n; j0 += 8) {
    const size_t nj = n - j0 < 8 ? n - j0 : 8;
    for (int64_t g = 0; g < cw * 8; ++g) {  // channels 8g .. 8g + 7: byte g % 8 of word g / 8
      uint64_t t = 0;
      for (int64_t c = 0; c < 8; ++c) {
        const int64_t m = g * 8 + c;
        const int32_t* row = acc + static_cast<size_t>(m) * ldo + j0;
        uint64_t r = 0;
        for (size_t jj = 0; jj < nj; ++jj) r |= static_cast<uint64_t>(row[jj] < thr[m]) << (8 * jj);
        t |= r << c;
      }
      for (size_t jj = 0; jj < nj; ++jj)
        ob[(j0 + jj) * static_cast<size_t>(cw) * 8 + static_cast<size_t>(g)] = static_cast<uint8_t>(t >> (8 * jj));
    }
  }
}

inline void requant_row(const int32_t* __restrict acc, size_t n, const ::lowbit::Qb1Requant& e,
                        uint8_t* __restrict y) {
  const int32_t off = e.w_sum - 2 * e.zp_x * e.w_sum;  // dot = (D + w_sum) / 2 - zp_x * w_sum = (D + off) / 2
  for (size_t j = 0; j < n; ++j) {
    const int32_t dot = (acc[j] + off) >> e.shift;  // exact: D + w_sum is even, so is D + off
    float v = __builtin_fmaf(static_cast<float>(dot), e.scale, e.bias);
    if (e.res) v = __builtin_fmaf(static_cast<float>(int32_t{e.res[j]} - e.res_zp), e.res_scale, v);
    v = __builtin_nearbyintf(std::min(std::max(v, e.qmin), e.qmax));  // fmaxf: a libm call (NaN rules)
    y[j] = static_cast<uint8_t>(static_cast<int32_t>(v) + e.zp_y);
  }
}

// t[MR] = T<MR, NR>::run for MR = 1..kMR (index 0 stays empty). T is each ISA file's named wrapper
// (qb1_gemm_tile__avx2<MR, NR>, ...): `inspect --kernels` finds the micro-kernels by that name.
template <template <int, int> class T, int NR, int... MR>
constexpr void fill_tiles(::lowbit::Qb1GemmUkernel* t, std::integer_sequence<int, MR...>) {
  ((t[MR] = MR ? &T<(MR ? MR : 1), NR>::run : nullptr), ...);
}

// constexpr: each ISA file's set is a constant (see Qb1GemmKernels).
template <template <int, int> class T, int kMR, int kNR>
constexpr ::lowbit::Qb1GemmKernels make_kernels(const char* name, const char* isa, uint32_t features,
                                                bool split_nibbles = false) {
  ::lowbit::Qb1GemmKernels k;
  k.split_nibbles = split_nibbles;
  k.name = name;
  k.isa = isa;
  k.features = features;
  k.mr = kMR;
  k.nr = kNR;
  fill_tiles<T, kNR>(k.main, std::make_integer_sequence<int, kMR + 1>{});
  k.pack_u1 = &pack_u1;
  k.requant = &requant_row;
  k.pack_sign_u8 = &pack_sign_u8;
  k.pack_sign_f32 = &pack_sign_f32;
  k.epilogue_f32 = &epilogue_f32;
  k.signs_out = &signs_out;
  return k;
}

}  // namespace
}  // namespace qb1
}  // namespace LOWBIT_KERNEL_NS
