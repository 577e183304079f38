#pragma once
// The channels-on-lanes depthwise kernel (F32DwconvKernels::lanes_group) of one set, and its
// grouped form (lanes_group_dense: cn input channels summed in order within each tap), against
// the zero-padded planes summed tap by tap with fmaf, residual added, then clamped in maxps / minps
// order: bit for bit, over channel tails (cn < lanes), strides 1-3, dilation 2, asymmetric and
// bottom-only padding, 1x1 to 33x35 planes, with inf, NaN, -0, huge and subnormal values. The
// output planes sit on the heap with a guard after them (and ASan watches the inputs), and the
// scratch is reused across cases with only its padding zeroed, as the operator does. Used by
// f32_kernels_test.cc (every set the host runs) and tests/simde (the emulated AVX-512 set).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lowbit/kernels/f32-dwconv/f32_dwconv.h"

namespace lowbit::dwconv_check {

inline void check_dwconv_lanes(const F32DwconvKernels& k) {
  struct Geo {
    int64_t H, W, KH, KW, S, D, pt, pl, pb, pr;
  };
  const Geo geos[] = {{7, 7, 5, 5, 1, 1, 2, 2, 2, 2},     {14, 14, 3, 3, 2, 1, 1, 1, 1, 1}, {1, 1, 3, 3, 1, 1, 1, 1, 1, 1},
                      {2, 3, 3, 3, 1, 1, 1, 1, 1, 1},     {9, 9, 7, 7, 1, 1, 3, 3, 3, 3},   {10, 17, 3, 3, 1, 1, 2, 0, 0, 2},
                      {13, 5, 3, 3, 1, 2, 2, 2, 2, 2},    {14, 14, 5, 5, 2, 1, 2, 2, 2, 2}, {15, 11, 5, 5, 2, 1, 0, 0, 2, 2},
                      {17, 19, 3, 3, 3, 1, 1, 1, 1, 1},   {1, 40, 1, 5, 1, 1, 0, 2, 0, 2},  {33, 35, 3, 3, 1, 1, 1, 1, 1, 1},
                      {6, 6, 3, 3, 2, 1, 0, 0, 0, 0}};
  const int64_t L = static_cast<int64_t>(k.lanes);
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  const float specials[] = {INFINITY, -INFINITY, NAN, -0.0f, 0.0f, 3e38f, -3e38f, 1e-42f};
  std::vector<float> scratch;
  for (bool dense : {false, true})
    for (const Geo& g : geos)
      for (int extreme = 0; extreme < 2; ++extreme)
        for (int64_t cn : {L, std::max<int64_t>(1, L - 3), int64_t{1}}) {
          const int64_t OH = (g.H + g.pt + g.pb - (g.KH - 1) * g.D - 1) / g.S + 1;
          const int64_t OW = (g.W + g.pl + g.pr - (g.KW - 1) * g.D - 1) / g.S + 1;
          const int64_t n_in = g.H * g.W, n_out = OH * OW, taps = g.KH * g.KW;
          const bool with_res = (cn + extreme) % 2 == 0;
          std::vector<float> x(static_cast<size_t>(cn * n_in)), res(static_cast<size_t>(cn * n_out));
          // Depthwise [tap][lane]; dense [tap][ic][lane] (ic < cn).
          const int64_t wic = dense ? L : 1;
          std::vector<float> w(static_cast<size_t>(taps * wic * L), 0.0f), bias(static_cast<size_t>(L), 0.0f);
          for (float& v : x) v = extreme && rng() % 5 == 0 ? specials[rng() % 8] : u(rng);
          for (float& v : res) v = u(rng);
          for (int64_t t = 0; t < taps; ++t)
            for (int64_t ic = 0; ic < (dense ? cn : 1); ++ic)
              for (int64_t c = 0; c < cn; ++c)
                w[static_cast<size_t>((t * wic + ic) * L + c)] = extreme && rng() % 4 == 0 ? specials[rng() % 8] : u(rng);
          for (int64_t c = 0; c < cn; ++c) bias[static_cast<size_t>(c)] = extreme && c == 0 ? -0.0f : u(rng);
          const float lo = extreme ? -1e30f : -1.5f, hi = extreme ? 1e30f : 1.25f;
          F32DwconvLanesGeometry geo{};
          geo.H = static_cast<size_t>(g.H), geo.W = static_cast<size_t>(g.W);
          geo.OH = static_cast<size_t>(OH), geo.OW = static_cast<size_t>(OW);
          geo.KH = static_cast<size_t>(g.KH), geo.KW = static_cast<size_t>(g.KW);
          geo.SH = geo.SW = static_cast<size_t>(g.S);
          geo.DH = geo.DW = static_cast<size_t>(g.D);
          geo.pad_top = static_cast<size_t>(g.pt), geo.pad_left = static_cast<size_t>(g.pl);
          geo.PH = static_cast<size_t>(std::max(g.H + g.pt, (OH - 1) * g.S + (g.KH - 1) * g.D + 1));
          geo.PW = static_cast<size_t>(std::max(g.W + g.pl, (OW - 1) * g.S + (g.KW - 1) * g.D + 1));
          const size_t pad_floats = geo.PH * geo.PW * static_cast<size_t>(L);
          // Reused across cases: the padding zeroed, the output part left with the last case's values.
          if (scratch.size() < pad_floats + static_cast<size_t>(n_out * L)) scratch.resize(pad_floats + static_cast<size_t>(n_out * L), 5.0f);
          std::fill(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(pad_floats), 0.0f);
          std::vector<float> y(static_cast<size_t>(cn * n_out) + 20, 7.0f);
          SCOPED_TRACE(std::string(k.isa) + " " + std::to_string(g.H) + "x" + std::to_string(g.W) + " k" +
                       std::to_string(g.KH) + "x" + std::to_string(g.KW) + " s" + std::to_string(g.S) + " d" +
                       std::to_string(g.D) + " cn " + std::to_string(cn) + " extreme " + std::to_string(extreme) +
                       (dense ? " dense" : ""));
          (dense ? k.lanes_group_dense : k.lanes_group)(x.data(), static_cast<size_t>(cn), geo, w.data(), bias.data(),
                                                        with_res ? res.data() : nullptr, lo, hi, y.data(), scratch.data());
          for (int64_t c = 0; c < cn; ++c)
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow) {
                float acc = bias[static_cast<size_t>(c)];
                for (int64_t kh = 0; kh < g.KH; ++kh)
                  for (int64_t kw = 0; kw < g.KW; ++kw) {
                    const int64_t ih = oh * g.S + kh * g.D - g.pt, iw = ow * g.S + kw * g.D - g.pl;
                    const bool in = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
                    const int64_t t = kh * g.KW + kw;
                    for (int64_t ic = dense ? 0 : c; ic < (dense ? cn : c + 1); ++ic)
                      acc = std::fmaf(w[static_cast<size_t>((t * wic + (dense ? ic : 0)) * L + c)],
                                      in ? x[static_cast<size_t>(ic * n_in + ih * g.W + iw)] : 0.0f, acc);
                  }
                const size_t q = static_cast<size_t>(c * n_out + oh * OW + ow);
                const float r = with_res ? acc + res[q] : acc;
                const float m = lo > r ? lo : r;  // maxps(lo, r): r when either is NaN
                const float want = hi < m ? hi : m, got = y[q];
                ASSERT_TRUE(std::memcmp(&got, &want, sizeof got) == 0 || (std::isnan(got) && std::isnan(want)))
                    << "channel " << c << " (" << oh << ", " << ow << "): " << got << " want " << want;
              }
          for (size_t i = static_cast<size_t>(cn * n_out); i < y.size(); ++i)
            ASSERT_EQ(y[i], 7.0f) << "wrote past the planes at " << i;
          for (size_t i = 0; i < pad_floats; ++i)
            if (scratch[i] != 0.0f) {
              // Only the input's own positions may have been written.
              const size_t px = i / static_cast<size_t>(L), ph = px / geo.PW, pw = px % geo.PW;
              ASSERT_TRUE(ph >= geo.pad_top && ph < geo.pad_top + geo.H && pw >= geo.pad_left && pw < geo.pad_left + geo.W)
                  << "wrote the padding at (" << ph << ", " << pw << ")";
            }
        }
}

}  // namespace lowbit::dwconv_check
