// The AVX-512 VPOPCNTDQ binary kernel, compiled against SIMDe, through the real driver on the
// cases every binary set is checked on (tests/qb1_test_support.h).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "lowbit/target/target.h"
#include "qb1_test_support.h"

namespace lowbit {
namespace {

TEST(Qb1ConvSimde, Avx512VpopcntdqMatchesTheOracle) {
  if (!host_target().has(Feature::avx2)) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  const Qb1GemmKernels& k = *simde_emulated::qb1_gemm_kernels_avx512popcnt();
  uint32_t seed = 1;
  for (const qb1test::Case& c : qb1test::cases(/*big=*/true)) qb1test::expect_exact(k, c, seed++);
  for (const qb1test::Case& c : qb1test::cases(/*big=*/false)) qb1test::expect_exact(k, c, seed++, /*splits=*/3);
}

}  // namespace
}  // namespace lowbit

namespace lowbit {
namespace {

// The loops around the tile, compiled with the AVX-512 flags (sign packing of u8 and f32 inputs,
// the f32 and u8 epilogues), against the portable set's (which tests/binary_conv_test.cc checks
// against the reference through every BinaryConv row).
TEST(Qb1ConvSimde, Avx512PackingAndEpiloguesMatchThePortableSet) {
  if (!host_target().has(Feature::avx2)) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  const Qb1GemmKernels& k = *simde_emulated::qb1_gemm_kernels_avx512popcnt();
  const Qb1GemmKernels& p = *qb1_gemm_kernel_sets().back();  // the portable set, always last
  std::mt19937 rng(7);
  for (int64_t C : {1, 31, 64, 65, 200})
    for (int64_t hw : {1, 7, 8, 29}) {
      const int64_t cw = (C + 63) / 64;
      std::vector<uint8_t> xu(static_cast<size_t>(C * hw));
      std::vector<float> xf(xu.size());
      for (size_t i = 0; i < xu.size(); ++i) {
        xu[i] = static_cast<uint8_t>(rng());
        xf[i] = i % 11 == 0 ? -0.0f : static_cast<float>(static_cast<int32_t>(rng() % 201) - 100);
      }
      for (uint8_t zp : {uint8_t{0}, uint8_t{1}, uint8_t{127}, uint8_t{128}, uint8_t{200}, uint8_t{255}}) {
        std::vector<uint64_t> a(static_cast<size_t>(hw * cw), 1), b(a.size(), 2);
        k.pack_sign_u8(xu.data(), C, hw, cw, 0, hw, zp, a.data());
        p.pack_sign_u8(xu.data(), C, hw, cw, 0, hw, zp, b.data());
        ASSERT_EQ(a, b) << "pack_sign_u8 C " << C << " hw " << hw << " zp " << int(zp);
      }
      std::vector<uint64_t> a(static_cast<size_t>(hw * cw), 1), b(a.size(), 2);
      k.pack_sign_f32(xf.data(), C, hw, cw, 0, hw, a.data());
      p.pack_sign_f32(xf.data(), C, hw, cw, 0, hw, b.data());
      ASSERT_EQ(a, b) << "pack_sign_f32 C " << C << " hw " << hw;
    }
  std::vector<int32_t> acc(301);
  std::vector<float> res(acc.size());
  std::vector<uint8_t> resq(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    acc[i] = static_cast<int32_t>(rng() % 4001) - 2000;
    res[i] = static_cast<float>(static_cast<int32_t>(rng() % 201) - 100) * 0.01f;
    resq[i] = static_cast<uint8_t>(rng());
  }
  Qb1EpilogueF32 e;
  e.alpha = 0.013f, e.bias = -0.4f, e.res = res.data(), e.lo = 0.0f;
  std::vector<float> ya(acc.size()), yb(acc.size());
  k.epilogue_f32(acc.data(), acc.size(), e, ya.data());
  p.epilogue_f32(acc.data(), acc.size(), e, yb.data());
  EXPECT_EQ(std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float)), 0);
  Qb1Requant r;
  r.shift = 0, r.scale = 0.07f, r.bias = 3.5f, r.res = resq.data(), r.res_scale = 0.8f, r.res_zp = 90, r.zp_y = 100;
  r.qmin = -100.0f, r.qmax = 155.0f;
  std::vector<uint8_t> qa(acc.size()), qb(acc.size());
  k.requant(acc.data(), acc.size(), r, qa.data());
  p.requant(acc.data(), acc.size(), r, qb.data());
  EXPECT_EQ(qa, qb);
}

}  // namespace
}  // namespace lowbit
