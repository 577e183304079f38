// The AVX-512 flat depthwise set, compiled against SIMDe, gives the bits of the taps summed in
// order with one fmaf each (what every set computes; tests/f32_kernels_test.cc checks the sets the
// host runs the same way, and the whole conv against the reference).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "lowbit/kernels/f32-dwconv/f32_dwconv.h"
#include "lowbit/target/target.h"
#include "../dwconv_lanes_check.h"
#include "../dwconv_s2_check.h"

namespace lowbit {
namespace {

TEST(DwconvSimde, Avx512SumsTheTapsInOrderWithOneFmaEach) {
  if (!host_target().has(Feature::avx2)) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  const F32DwconvKernels& k = *simde_emulated::f32_dwconv_avx512();
  ASSERT_EQ(k.lanes, 16u);
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (size_t n : {size_t{1}, size_t{16}, size_t{77}, size_t{200}, size_t{1000}}) {
    const std::vector<int32_t> off = {0, 1, 2, 13, 14, 15, 26, 27, 28};
    const size_t padded = (n + 15) / 16 * 16;
    std::vector<float> src(padded + 64), w(off.size()), out(padded, NAN);
    for (float& v : src) v = u(rng);
    for (float& v : w) v = u(rng);
    k.flat(src.data(), off.data(), w.data(), off.size(), 0.25f, n, out.data());
    for (size_t q = 0; q < n; ++q) {
      float acc = 0.25f;
      for (size_t t = 0; t < off.size(); ++t) acc = std::fmaf(w[t], src[static_cast<size_t>(off[t]) + q], acc);
      ASSERT_EQ(out[q], acc) << "n " << n << " q " << q;
    }
    // Rows of 7 valid outputs out of 13, residual and clamp.
    const size_t rows = n / 13;
    std::vector<float> res(rows * 7), y(rows * 7);
    for (float& v : res) v = u(rng);
    k.store(out.data(), 13, rows, 7, res.data(), -1.0f, 1.5f, y.data());
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < 7; ++c)
        ASSERT_EQ(y[r * 7 + c], std::min(1.5f, std::max(-1.0f, out[r * 13 + c] + res[r * 7 + c])));
  }
}

// The direct path (stride 1, "same" padding, lanes masked to the unpadded plane) against the
// zero-padded plane summed with fmaf: a 12 x 112 plane under a 3x3 kernel with padding 1, residual
// and clamp (vectors wholly inside a row, with plain loads, and vectors across rows, masked).
TEST(DwconvSimde, Avx512DirectIsThePaddedPlane) {
  if (!host_target().has(Feature::avx2)) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  const F32DwconvKernels& k = *simde_emulated::f32_dwconv_avx512();
  ASSERT_NE(k.direct, nullptr);
  constexpr int64_t H = 12, W = 112, n = H * W, nvec = (n + 15) / 16;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> x(n), res(n), w(9), y(n + 16, 7.0f);
  for (float& v : x) v = u(rng);
  for (float& v : res) v = u(rng);
  for (float& v : w) v = u(rng);
  std::vector<int32_t> off;
  std::vector<uint16_t> masks(9 * nvec, 0);
  for (int64_t t = 0; t < 9; ++t) {
    const int64_t dh = t / 3 - 1, dw = t % 3 - 1;
    off.push_back(static_cast<int32_t>(dh * W + dw));
    for (int64_t q = 0; q < n; ++q) {
      const int64_t ih = q / W + dh, iw = q % W + dw;
      if (ih >= 0 && ih < H && iw >= 0 && iw < W) masks[t * nvec + q / 16] |= static_cast<uint16_t>(1u << (q % 16));
    }
  }
  std::vector<uint32_t> order(nvec);
  const size_t n_plain = f32_dwconv_direct_order(masks.data(), 9, nvec, 16, order.data());
  ASSERT_GE(2 * n_plain, static_cast<size_t>(nvec));  // the kernel takes the plain loads
  ASSERT_LT(n_plain, static_cast<size_t>(nvec));
  const float bias = 0.25f;
  k.direct(x.data(), off.data(), masks.data(), order.data(), n_plain, w.data(), 9, &bias, n, 1, res.data(), -1.0f, 1.5f,
           y.data());
  for (int64_t q = 0; q < n; ++q) {
    float acc = 0.25f;
    for (int64_t t = 0; t < 9; ++t) {
      const int64_t ih = q / W + t / 3 - 1, iw = q % W + t % 3 - 1;
      acc = std::fmaf(w[t], ih >= 0 && ih < H && iw >= 0 && iw < W ? x[ih * W + iw] : 0.0f, acc);
    }
    ASSERT_EQ(y[q], std::min(1.5f, std::max(-1.0f, acc + res[q]))) << "q " << q;
  }
  for (int64_t i = n; i < n + 16; ++i) ASSERT_EQ(y[i], 7.0f) << "wrote past the plane";
}

// The stride-2 direct path (dwconv_s2_check.h): masked load pairs, deinterleaves, rows outside.
TEST(DwconvSimde, Avx512DirectS2IsThePaddedPlane) {
  if (!host_target().has(Feature::avx2)) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  dwconv_check::check_dwconv_direct_s2(*simde_emulated::f32_dwconv_avx512());
}

// Channels on the lanes (dwconv_lanes_check.h): the 16 x 16 transposes and the masked tails.
TEST(DwconvSimde, Avx512LanesIsThePaddedPlane) {
  if (!host_target().has(Feature::avx2)) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  dwconv_check::check_dwconv_lanes(*simde_emulated::f32_dwconv_avx512());
}

}  // namespace
}  // namespace lowbit
