// The flat polyphase plan and the weight words of the qu8 depthwise kernels (qu8_dwconv.h).
#include <algorithm>
#include <cstring>

#include "lowbit/kernels/qu8-dwconv/qu8_dwconv.h"

namespace lowbit {

namespace {
// Calls f(kh, pw, g, q0, nq) for every tap group in plan order: kernel row kh, column phase pw,
// group g covering the phase row's tap positions q0 .. q0 + G - 1 of nq (tap kw = pw + cp * q).
template <class F>
void for_each_group(size_t KH, size_t KW, size_t cp, size_t G, F&& f) {
  size_t g = 0;
  for (size_t kh = 0; kh < KH; ++kh)
    for (size_t pw = 0; pw < std::min(cp, KW); ++pw) {
      const size_t nq = (KW - pw + cp - 1) / cp;
      for (size_t q0 = 0; q0 < nq; q0 += G) f(kh, pw, g++, q0, nq);
    }
}
}  // namespace

Qu8DwPlan qu8_dw_plan(size_t H, size_t W, size_t KH, size_t KW, size_t SH, size_t SW, size_t pad_top,
                      size_t pad_left, size_t OH, size_t OW, uint8_t zp_x, size_t G) {
  Qu8DwPlan p;
  p.H = H, p.W = W, p.OH = OH, p.OW = OW, p.SH = SH, p.SW = SW, p.pad_top = pad_top, p.pad_left = pad_left;
  p.zp_x = zp_x;
  p.G = G;
  // Stride 2 with G a multiple of it: the columns stay whole and the words step by 2 (word i =
  // values 2i .. 2i + G - 1, taps kw = 0 .. G - 1 of output i). Otherwise (stride 1, or 3 and
  // more: the kernels' word makers step by 1 or 2 only) each column phase is its own plane and the
  // words step by 1.
  const bool whole = SW == 2 && G % 2 == 0;
  p.cp = whole || SW == 1 ? 1 : SW;
  p.ws = whole ? 2 : 1;
  // Output ow reads values ws * ow + q (q < KW / cp rounded up) of its phase row: L words per row
  // cover them; rows OH - 1 + (KH - 1) / SH.
  const size_t nq = (KW + p.cp - 1) / p.cp;
  p.L = OW - 1 + (nq + p.ws - 1) / p.ws;
  p.R = OH + (KH - 1) / SH;
  p.n_flat = (OH * p.L + Qu8DwPlan::kVec - 1) / Qu8DwPlan::kVec * Qu8DwPlan::kVec;
  size_t ngroups = 0, max_off = 0;
  for_each_group(KH, KW, p.cp, G, [&](size_t, size_t, size_t, size_t, size_t) { ++ngroups; });
  if (ngroups > Qu8DwPlan::kMaxGroups) return p;  // ngroups stays 0: the caller rejects the node
  const size_t phase = p.R * p.L;  // words
  for_each_group(KH, KW, p.cp, G, [&](size_t kh, size_t pw, size_t g, size_t q0, size_t) {
    const size_t off = ((kh % SH) * p.cp + pw) * phase + (kh / SH) * p.L + q0 / p.ws;
    p.off[g] = static_cast<int32_t>(off);
    max_off = std::max(max_off, off);
  });
  p.ngroups = ngroups;
  // The last vector of outputs reads words up to n_flat - 1 + max_off, past the phases where
  // OH * L is not a multiple of kVec.
  p.words = std::max(SH * p.cp * phase, p.n_flat + max_off);
  p.words = (p.words + 15) / 16 * 16;
  return p;
}

void qu8_dw_pack_weights(const Qu8DwPlan& p, size_t KH, size_t KW, const int8_t* w, bool widened, int32_t* words) {
  std::fill(words, words + p.ngroups, 0);
  for_each_group(KH, KW, p.cp, p.G, [&](size_t kh, size_t pw, size_t g, size_t q0, size_t nq) {
    uint32_t word = 0;
    for (size_t s = 0; s < p.G && q0 + s < nq; ++s) {
      const int8_t v = w[kh * KW + pw + p.cp * (q0 + s)];
      word |= widened ? static_cast<uint32_t>(static_cast<uint16_t>(int16_t{v})) << (16 * s)
                      : static_cast<uint32_t>(static_cast<uint8_t>(v)) << (8 * s);
    }
    std::memcpy(&words[g], &word, 4);
  });
}

}  // namespace lowbit
