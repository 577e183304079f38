#pragma once
// The stride-2 direct depthwise kernel (F32DwconvKernels::direct_s2) of one set: the unpadded plane
// read in place, two masked loads and a deinterleave per kernel row and column pair, against the
// zero-padded plane summed tap by tap with fmaf, residual added, then clamped in maxps / minps
// order: bit for bit, with inf, NaN, -0, huge and subnormal values, so the lanes outside the row
// and the rows outside the plane must give fma(w, 0, acc). Rows of 1 to 4 vectors (blocks of 8
// spanning rows), symmetric, TF-style and one-sided pads, even and odd sizes, 3x3 and 5x5, with and
// without a residual, 3 planes a call. The planes sit alone on the heap (ASan watches the reads)
// and the output has a guard after it. Used by f32_kernels_test.cc (every set the host runs) and
// tests/simde (the emulated AVX-512 set).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lowbit/kernels/f32-dwconv/f32_dwconv.h"

namespace lowbit::dwconv_check {

inline void check_dwconv_direct_s2(const F32DwconvKernels& k) {
  ASSERT_NE(k.direct_s2, nullptr);
  struct Geo {
    int64_t H, W, K, pt, pl, pb, pr;
  };
  const Geo geos[] = {{112, 112, 3, 1, 1, 1, 1}, {56, 56, 3, 1, 1, 1, 1}, {28, 28, 5, 2, 2, 2, 2},
                      {14, 14, 3, 0, 0, 1, 1},   {15, 13, 5, 2, 2, 2, 2}, {7, 7, 3, 1, 1, 1, 1},
                      {1, 1, 3, 1, 1, 1, 1},     {2, 3, 5, 2, 2, 2, 2},   {9, 70, 3, 1, 0, 0, 2},
                      {20, 33, 5, 0, 2, 2, 0},   {4, 97, 3, 1, 1, 1, 1}};
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  const float specials[] = {INFINITY, -INFINITY, NAN, -0.0f, 0.0f, 3e38f, -3e38f, 1e-42f};
  constexpr int64_t P = 3;
  const auto uz = [](int64_t v) { return static_cast<size_t>(v); };
  for (const Geo& g : geos)
    for (int extreme = 0; extreme < 2; ++extreme) {
      const int64_t OH = (g.H + g.pt + g.pb - g.K) / 2 + 1, OW = (g.W + g.pl + g.pr - g.K) / 2 + 1;
      const int64_t n = g.H * g.W, no = OH * OW, taps = g.K * g.K;
      std::vector<float> x(uz(P * n)), res(uz(P * no)), w(uz(P * taps));
      for (float& v : x) v = extreme && rng() % 5 == 0 ? specials[rng() % 8] : u(rng);
      for (float& v : res) v = u(rng);
      for (float& v : w) v = extreme && rng() % 4 == 0 ? specials[rng() % 8] : u(rng);
      const std::vector<float> bias = {extreme ? -0.0f : 0.375f, -1.25f, 0.5f};
      const float lo = extreme ? -1e30f : -1.5f, hi = extreme ? 1e30f : 1.25f;
      std::vector<uint16_t> masks;
      const F32DwconvS2Geometry geo = f32_dwconv_s2_plan(uz(g.H), uz(g.W), uz(OH), uz(OW), uz(g.K), uz(g.K), uz(g.pt),
                                                         uz(g.pl), k.lanes, masks);
      for (bool with_res : {false, true}) {
        SCOPED_TRACE(std::to_string(g.H) + "x" + std::to_string(g.W) + " k" + std::to_string(g.K) + " pads " +
                     std::to_string(g.pt) + "," + std::to_string(g.pl) + "," + std::to_string(g.pb) + "," +
                     std::to_string(g.pr) + " extreme " + std::to_string(extreme) + " res " + std::to_string(with_res));
        std::vector<float> want(res.size());
        for (int64_t pl = 0; pl < P; ++pl)
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
              float acc = bias[uz(pl)];
              for (int64_t kh = 0; kh < g.K; ++kh)
                for (int64_t kw = 0; kw < g.K; ++kw) {
                  const int64_t ih = 2 * oh + kh - g.pt, iw = 2 * ow + kw - g.pl;
                  const bool in = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
                  acc = std::fmaf(w[uz(pl * taps + kh * g.K + kw)], in ? x[uz(pl * n + ih * g.W + iw)] : 0.0f, acc);
                }
              const size_t q = uz(pl * no + oh * OW + ow);
              const float r = with_res ? acc + res[q] : acc;
              const float m = lo > r ? lo : r;  // maxps(lo, r): r when either is NaN
              want[q] = hi < m ? hi : m;
            }
        std::vector<float> y(want.size() + 20, 7.0f);
        k.direct_s2(x.data(), geo, masks.data(), w.data(), bias.data(), P, with_res ? res.data() : nullptr, lo, hi,
                    y.data());
        for (size_t q = 0; q < want.size(); ++q) {
          const float a = y[q], b = want[q];
          ASSERT_TRUE(std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)))
              << "q " << q << ": " << a << " want " << b;
        }
        for (size_t i = want.size(); i < y.size(); ++i) ASSERT_EQ(y[i], 7.0f) << "wrote past the planes at " << i;
      }
    }
}

}  // namespace lowbit::dwconv_check
