#pragma once
// The qu8 depthwise family, written once (qu8_dwconv.h, README.md). Each ISA file instantiates
// qu8_dw_plane<Traits> in its own translation unit with its own flags; Traits supplies:
//   G, Acc, Wv                  group size, 16 int32 accumulators, one broadcast weight word
//   Wv bcast(int32_t)           a weight word in every lane
//   Acc init(int32_t)           16 accumulators at a value
//   void dot(Acc&, const int32_t* words, Wv)   acc[i] += sum_s value_s(words[i]) * w_s, i < 16
//   void make_words(const uint8_t* v, size_t n, uint8_t zp_x, int32_t* words)  n % 16 == 0:
//        word i = values v[i .. i + G - 1]; make_words_stride2: values v[2i .. 2i + G - 1]
//   Requant (constructed from a Qu8GemmEpilogue), void store(const Acc&, Requant&, const uint8_t*
//   res16 or nullptr, uint8_t* out16)   requantize 16 outputs (exact contract) and store them
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "lowbit/kernels/qu8-dwconv/qu8_dwconv.h"

namespace LOWBIT_KERNEL_NS {
namespace {

// memcpy for the short rows of small planes (a 7 x 7 map copies 7 bytes per row, and a call to
// memcpy per row cost as much as the arithmetic): fixed-size moves that overlap, never touching a
// byte outside [dst, dst + n) or [src, src + n).
inline void qu8_dw_copy(uint8_t* dst, const uint8_t* src, size_t n) {
  if (n >= 16) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) std::memcpy(dst + i, src + i, 16);
    if (i < n) std::memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

// The padded plane as SH x cp phases of R rows of ws * L bytes, everything outside the image zp_x
// (the value whose contribution the zero-point correction cancels), then bytes up to the end of
// what the words read.
inline void qu8_dw_fill_phases(const uint8_t* x, const ::lowbit::Qu8DwPlan& p, uint8_t* v) {
  const size_t row = p.ws * p.L, phase = p.R * row;
  std::memset(v, p.zp_x, p.ws * p.words + 64);
  for (size_t ph = 0; ph < p.SH; ++ph)
    for (size_t pw = 0; pw < p.cp; ++pw) {
      uint8_t* base = v + (ph * p.cp + pw) * phase;
      // Value i of a row holds padded column i * cp + pw: image column i * cp + pw - pad_left.
      if (p.W + p.pad_left <= pw) continue;
      const size_t i0 = pw >= p.pad_left ? 0 : (p.pad_left - pw + p.cp - 1) / p.cp;
      const size_t i1 = std::min(row, (p.W - 1 + p.pad_left - pw) / p.cp + 1);
      if (i0 >= i1) continue;
      const size_t c0 = i0 * p.cp + pw - p.pad_left, n = i1 - i0;  // image column of value i0
      for (size_t r = 0; r < p.R; ++r) {
        const size_t hp = r * p.SH + ph;  // padded row
        if (hp < p.pad_top || hp - p.pad_top >= p.H) continue;
        const uint8_t* src = x + (hp - p.pad_top) * p.W + c0;
        uint8_t* dst = base + r * row + i0;
        if (p.cp == 1) {
          qu8_dw_copy(dst, src, n);
        } else {  // stride 3 and up (G % SW != 0): rare, scalar
          for (size_t i = 0; i < n; ++i) dst[i] = src[i * p.cp];
        }
      }
    }
}

// The outputs of the flat plane, 16 at a time. NG > 0: that many groups, unrolled, with the
// offsets and weights in locals (registers): the u8 stores may alias anything, so values read
// through p or w would be reloaded after every one. NG = 0: p.ngroups, in a loop.
// Always inlined, as qu8_dw_plane: the whole family then lives in each ISA's one named plane
// kernel (qu8_dwconv2d_flat__<isa>), where `inspect --kernels` finds its instructions.
template <class T, size_t NG>
[[gnu::always_inline]] inline void qu8_dw_taps(const int32_t* words, const ::lowbit::Qu8DwPlan& p, const int32_t* w, int32_t init,
                        typename T::Requant& rq, const uint8_t* res, uint8_t* flat) {
  constexpr size_t kVec = ::lowbit::Qu8DwPlan::kVec;
  constexpr size_t kMax = NG ? NG : ::lowbit::Qu8DwPlan::kMaxGroups;
  const size_t ng = NG ? NG : p.ngroups;
  typename T::Wv wv[kMax];
  size_t off[kMax];
  for (size_t g = 0; g < ng; ++g) {
    wv[g] = T::bcast(w[g]);
    off[g] = static_cast<size_t>(p.off[g]);
  }
  const size_t n = p.n_flat;
  for (size_t o = 0; o < n; o += kVec) {
    typename T::Acc acc = T::init(init);
    const int32_t* wo = words + o;
#pragma GCC unroll 16
    for (size_t g = 0; g < ng; ++g) T::dot(acc, wo + off[g], wv[g]);
    T::store(acc, rq, res ? res + o : nullptr, flat + o);
  }
}

template <class T>
[[gnu::always_inline]] inline void qu8_dw_plane(const uint8_t* x, const ::lowbit::Qu8DwPlan& p, const int32_t* w, int32_t init, uint8_t* y,
                  const ::lowbit::Qu8GemmEpilogue& e, void* scratch) {
  uint8_t* values = static_cast<uint8_t*>(scratch);
  int32_t* words = reinterpret_cast<int32_t*>(values + (p.ws * p.words + 64 + 63) / 64 * 64);
  uint8_t* flat = reinterpret_cast<uint8_t*>(words + p.words);
  uint8_t* flat_res = flat + p.n_flat + 64;

  qu8_dw_fill_phases(x, p, values);
  if (p.ws == 1) T::make_words(values, p.words, p.zp_x, words);
  else T::make_words_stride2(values, p.words, p.zp_x, words);  // the plan's ws is 1 or 2
  const uint8_t* res = nullptr;
  if (e.res) {  // the residual in the flat layout; the columns past OW are read, never kept
    for (size_t oh = 0; oh < p.OH; ++oh) {
      qu8_dw_copy(flat_res + oh * p.L, e.res + oh * p.OW, p.OW);
      std::memset(flat_res + oh * p.L + p.OW, 0, p.L - p.OW);
    }
    std::memset(flat_res + p.OH * p.L, 0, p.n_flat - p.OH * p.L);
    res = flat_res;
  }

  typename T::Requant rq(e);
  switch (p.ngroups) {  // the group counts of 3x3 and 5x5 kernels at G = 2 and 4, stride 1 and 2
    case 3: qu8_dw_taps<T, 3>(words, p, w, init, rq, res, flat); break;
    case 6: qu8_dw_taps<T, 6>(words, p, w, init, rq, res, flat); break;
    case 10: qu8_dw_taps<T, 10>(words, p, w, init, rq, res, flat); break;
    case 15: qu8_dw_taps<T, 15>(words, p, w, init, rq, res, flat); break;
    default: qu8_dw_taps<T, 0>(words, p, w, init, rq, res, flat); break;
  }
  for (size_t oh = 0; oh < p.OH; ++oh) qu8_dw_copy(y + oh * p.OW, flat + oh * p.L, p.OW);
}

}  // namespace
}  // namespace LOWBIT_KERNEL_NS
