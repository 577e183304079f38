#pragma once
// u8 AveragePool of one CHW plane (qu8_pool.h, Qu8AvgGeometry), written once as loops that each
// ISA file's flags vectorise (the row sums and the division; AVX2 vdivps / vroundps): included by
// avx2.cc and neon.cc only. The division and nearbyintf are IEEE operations on exact integers,
// so every ISA and the reference give the same bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "lowbit/kernels/qu8-pool/qu8_pool.h"

namespace lowbit {
namespace qu8pool {
namespace {

inline void avgpool_plane(const uint8_t* __restrict x, const Qu8AvgGeometry& g, uint32_t* __restrict scratch,
                          uint8_t* __restrict y) {
  const int64_t H = static_cast<int64_t>(g.H), W = static_cast<int64_t>(g.W);
  const size_t P = g.OH * g.OW;
  uint32_t* __restrict rowsum = scratch;
  uint32_t* __restrict sums = scratch + W;
  const int32_t* __restrict wf = g.w_first;
  const int32_t* __restrict iw = g.in_w;
  for (size_t oh = 0; oh < g.OH; ++oh) {
    for (int64_t w = 0; w < W; ++w) rowsum[w] = 0;
    const int64_t ih0 = static_cast<int64_t>(oh * g.SH) - g.pad_top;
    for (size_t kh = 0; kh < g.KH; ++kh) {
      const int64_t ih = ih0 + static_cast<int64_t>(kh * g.DH);
      if (ih < 0 || ih >= H) continue;
      const uint8_t* __restrict r = x + ih * W;
      for (int64_t w = 0; w < W; ++w) rowsum[w] += r[w];
    }
    uint32_t* __restrict sr = sums + oh * g.OW;
    // Windows wholly inside the row with a common shape get constant trip counts, which GCC
    // vectorises (2x2 / 2 shortcuts: the per-output loop below took 3x the fp32 kernel).
    const auto inside = [&]<size_t KW, size_t SW>() {
      const uint32_t* __restrict c = rowsum + wf[0];
      for (size_t ow = 0; ow < g.OW; ++ow) {
        uint32_t s = 0;
        for (size_t t = 0; t < KW; ++t) s += c[ow * SW + t];
        sr[ow] = s;
      }
    };
    if (g.w_inside && g.DW == 1 && g.KW == 2 && g.SW == 2) inside.template operator()<2, 2>();
    else if (g.w_inside && g.DW == 1 && g.KW == 3 && g.SW == 2) inside.template operator()<3, 2>();
    else if (g.w_inside && g.DW == 1 && g.KW == 3 && g.SW == 1) inside.template operator()<3, 1>();
    else
      for (size_t ow = 0; ow < g.OW; ++ow) {
        const uint32_t* c = rowsum + wf[ow];
        uint32_t s = 0;
        for (int32_t t = 0; t < iw[ow]; ++t) s += c[static_cast<size_t>(t) * g.DW];
        sr[ow] = s;
      }
  }
  const int32_t* __restrict cnt = g.cnt;
  const int32_t* __restrict corr = g.corr;
  const int32_t zp = g.zp;
  for (size_t p = 0; p < P; ++p) {
    const int32_t c = cnt[p];  // a local: std::max(cnt[p], 1) is a conditional load, not vectorised
    const int32_t num = static_cast<int32_t>(sums[p]) + corr[p];
    // Clamped in float, converted unconditionally, then selected: a conversion under a
    // condition, or of an unclamped float, is what GCC will not vectorise (it may trap). The
    // rounded quotient is an integer, so the float clamp equals the reference's int one.
    const float v = __builtin_nearbyintf(static_cast<float>(num) / static_cast<float>(std::max(c, 1)));
    const int32_t q = static_cast<int32_t>(std::min(std::max(v, 0.0f), 255.0f));
    y[p] = static_cast<uint8_t>(c > 0 ? q : zp);
  }
}

}  // namespace
}  // namespace qu8pool
}  // namespace lowbit
