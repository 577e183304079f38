#pragma once
// The binary conv oracle and the cases every binary kernel set is checked on (tests/binary_test.cc
// for the sets this build runs, tests/simde for AVX-512 VPOPCNTDQ through SIMDe).
//
// The oracle is written for clarity and shares nothing with the kernels: +-1 values as ints in
// NCHW, the ONNX Conv loop nest, padding by value (0, +1 or -1).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "lowbit/kernels/qb1-gemm/qb1_gemm.h"

namespace lowbit::qb1test {

struct Case {
  Qb1ConvShape s;
  B1Padding pad = B1Padding::zero;
  int fill = 0;  // 0: random signs, +1 / -1: every value (the extremes: dot = +-K)
};

inline int pad_value(B1Padding p) { return p == B1Padding::zero ? 0 : p == B1Padding::plus_one ? 1 : -1; }

// x: [C][H][W], w: [M][C][KH][KW], values +-1 -> [M][OH*OW]
inline std::vector<int32_t> oracle(const Qb1ConvShape& s, const std::vector<int>& x, const std::vector<int>& w,
                                   int pad) {
  std::vector<int32_t> y(static_cast<size_t>(s.M * s.OH() * s.OW()));
  for (int64_t m = 0; m < s.M; ++m)
    for (int64_t oh = 0; oh < s.OH(); ++oh)
      for (int64_t ow = 0; ow < s.OW(); ++ow) {
        int32_t acc = 0;
        for (int64_t c = 0; c < s.C; ++c)
          for (int64_t kh = 0; kh < s.KH; ++kh)
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              const int64_t ih = oh * s.SH - s.PT + kh * s.DH, iw = ow * s.SW - s.PL + kw * s.DW;
              const bool in = ih >= 0 && ih < s.H && iw >= 0 && iw < s.W;
              const int xv = in ? x[static_cast<size_t>((c * s.H + ih) * s.W + iw)] : pad;
              acc += xv * w[static_cast<size_t>(((m * s.C + c) * s.KH + kh) * s.KW + kw)];
            }
        y[static_cast<size_t>((m * s.OH() + oh) * s.OW() + ow)] = acc;
      }
  return y;
}

inline Qb1ConvShape shape(int64_t C, int64_t H, int64_t W, int64_t M, int64_t K, int64_t S, int64_t P, int64_t D = 1) {
  Qb1ConvShape s;
  s.C = C, s.H = H, s.W = W, s.M = M, s.KH = s.KW = K, s.SH = s.SW = S, s.DH = s.DW = D;
  s.PT = s.PL = s.PB = s.PR = P;
  return s;
}

// Odd channel counts around the 64-bit word (1, 31, 33, 63, 65, 200), strides 1 and 2, pads 0-2
// in all three padding modes, 1x1 / 3x3 / 5x5, dilation, 1-pixel and odd maps, channel counts that
// leave a partial row panel, plus all-+1 and all--1 extremes.
inline std::vector<Case> cases(bool big) {
  std::vector<Case> v;
  const B1Padding pads[] = {B1Padding::zero, B1Padding::plus_one, B1Padding::minus_one};
  int i = 0;
  for (int64_t C : {1, 31, 33, 63, 64, 65, 200})
    for (int64_t K : {1, 3, 5})
      for (int64_t S : {1, 2}) {
        const int64_t P = K == 1 ? (i % 2) : (K / 2 + i % 2);  // 0/1 for 1x1, same and same+1 otherwise
        const int64_t M = (i % 3 == 0) ? 1 : (i % 3 == 1) ? 5 : 13;
        const int64_t H = 1 + (i * 5) % 9, W = 2 + (i * 7) % 11;
        Qb1ConvShape s = shape(C, H, W, M, K, S, P, (i % 5 == 4) ? 2 : 1);
        if (s.OH() >= 1 && s.OW() >= 1) v.push_back({s, pads[i % 3], 0});
        ++i;
      }
  // Asymmetric padding, every mode on one shape.
  for (B1Padding p : pads) {
    Qb1ConvShape s = shape(65, 7, 6, 9, 3, 1, 0);
    s.PT = 2, s.PL = 0, s.PB = 1, s.PR = 2;
    v.push_back({s, p, 0});
  }
  v.push_back({shape(130, 5, 5, 17, 3, 1, 1), B1Padding::zero, +1});
  v.push_back({shape(130, 5, 5, 17, 3, 1, 1), B1Padding::minus_one, -1});
  v.push_back({shape(127, 4, 3, 8, 3, 2, 2), B1Padding::plus_one, -1});
  if (big) {
    v.push_back({shape(256, 14, 14, 64, 3, 1, 1), B1Padding::zero, 0});  // 31+ words per tap run
    v.push_back({shape(512, 7, 7, 33, 3, 1, 1), B1Padding::zero, 0});
    v.push_back({shape(128, 28, 28, 20, 3, 2, 1), B1Padding::plus_one, 0});
  }
  return v;
}

inline std::string describe(const Case& c) {
  const Qb1ConvShape& s = c.s;
  return "C" + std::to_string(s.C) + " " + std::to_string(s.H) + "x" + std::to_string(s.W) + " M" +
         std::to_string(s.M) + " k" + std::to_string(s.KH) + " s" + std::to_string(s.SH) + " d" +
         std::to_string(s.DH) + " pad " + std::to_string(s.PT) + "," + std::to_string(s.PL) + "," +
         std::to_string(s.PB) + "," + std::to_string(s.PR) + " value " + std::to_string(pad_value(c.pad)) +
         (c.fill ? " fill " + std::to_string(c.fill) : "");
}

// Runs `k` on the case (in `splits` pixel ranges, as threads would) and compares with the oracle.
inline void expect_exact(const Qb1GemmKernels& k, const Case& c, uint32_t seed, int splits = 1) {
  SCOPED_TRACE(std::string(k.name) + ": " + describe(c));
  const Qb1ConvShape& s = c.s;
  std::mt19937 rng(seed);
  auto sign = [&] { return c.fill ? c.fill : (rng() & 1 ? 1 : -1); };
  std::vector<int> x(static_cast<size_t>(s.C * s.H * s.W)), w(static_cast<size_t>(s.M * s.C * s.KH * s.KW));
  for (int& v : x) v = sign();
  for (int& v : w) v = sign();
  std::vector<float> xf(x.begin(), x.end()), wf(w.begin(), w.end());
  const std::vector<uint64_t> xb = pack_b1_nchw(xf.data(), s.C, s.H, s.W);
  const Qb1PackedWeights pw = pack_b1_weights(s, wf.data(), k);
  const int64_t P = s.OH() * s.OW();
  std::vector<int32_t> y(static_cast<size_t>(s.M * P), INT32_MIN);
  for (int part = 0; part < splits; ++part)
    qb1_conv2d(k, pw, xb.data(), c.pad, y.data(), P * part / splits, P * (part + 1) / splits);
  const std::vector<int32_t> ref = oracle(s, x, w, pad_value(c.pad));
  int bad = 0;
  for (size_t i = 0; i < ref.size() && bad < 5; ++i)
    if (y[i] != ref[i]) {
      ADD_FAILURE() << "channel " << i / static_cast<size_t>(P) << " pixel " << i % static_cast<size_t>(P) << ": "
                    << y[i] << " != " << ref[i];
      ++bad;
    }
}

}  // namespace lowbit::qb1test
