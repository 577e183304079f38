// The AVX-512 element-wise set, compiled against SIMDe, against the portable set bit for bit on
// random and special values (tests/f32_velementwise_test.cc checks the portable set against the
// reference and double-precision math).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "lowbit/kernels/f32-velementwise/velementwise.h"
#include "lowbit/target/target.h"

namespace lowbit {
namespace {

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TEST(VElementwiseSimde, Avx512GivesThePortableSetsBits) {
  if (!host_target().has(Feature::avx2)) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  const F32VElementwiseKernels& k = *simde_emulated::f32_velementwise_avx512();
  const F32VElementwiseKernels& p = *f32_velementwise_sets().back();
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_real_distribution<float> small(-20.0f, 20.0f);
  const float inf = std::numeric_limits<float>::infinity();
  for (size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{100}, size_t{5000}}) {
    std::vector<float> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = i % 3 ? small(rng) : std::bit_cast<float>(bits(rng));
      b[i] = i % 5 ? small(rng) : std::bit_cast<float>(bits(rng));
    }
    a[0] = n > 1 ? -inf : a[0];
    VUnaryParams prm;
    prm.alpha = 0.2f, prm.beta = 0.5f, prm.lo = -1.0f, prm.hi = 6.0f;
    for (int u = 0; u < kVUnaryCount; ++u) {
      std::vector<float> y(n), r(n);
      k.unary[u](n, a.data(), y.data(), prm);
      p.unary[u](n, a.data(), r.data(), prm);
      for (size_t i = 0; i < n; ++i)
        ASSERT_TRUE(same(y[i], r[i])) << vunary_name(static_cast<VUnary>(u)) << " x " << a[i] << ": " << y[i] << " vs " << r[i];
    }
    for (int o = 0; o < kVBinaryCount; ++o) {
      std::vector<float> y(n), r(n);
      for (int mode = 0; mode < 3; ++mode) {
        (mode == 0 ? k.vv[o] : mode == 1 ? k.vs[o] : k.sv[o])(n, a.data(), b.data(), y.data());
        (mode == 0 ? p.vv[o] : mode == 1 ? p.vs[o] : p.sv[o])(n, a.data(), b.data(), r.data());
        for (size_t i = 0; i < n; ++i) ASSERT_TRUE(same(y[i], r[i])) << vbinary_name(static_cast<VBinary>(o)) << " " << mode;
      }
    }
  }
}

}  // namespace
}  // namespace lowbit
