// The VNNI kernels, compiled against SIMDe (no VNNI instructions needed), against the reference:
// same cases as tests/qu8_kernels_test.cc, through the real driver.
#include <gtest/gtest.h>

#include "lowbit/target/target.h"
#include "qu8_test_support.h"

namespace lowbit {
namespace {

bool host_has_avx2() { return host_target().has(Feature::avx2) && host_target().has(Feature::fma); }

TEST(Qu8ConvSimde, Avx512VnniMatchesReference) {
  if (!host_has_avx2()) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  for (const qu8test::ConvCase& c : qu8test::conv_cases(/*big=*/true))
    qu8test::expect_conv_exact(c, [](const NodeContext& ctx) {
      return create_qconv2d_u8_igemm(ctx, simde_emulated::qu8_gemm_kernels_avx512vnni());
    });
}

TEST(Qu8ConvSimde, Avx512Vnni8x32MatchesReference) {
  if (!host_has_avx2()) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  for (const qu8test::ConvCase& c : qu8test::conv_cases(/*big=*/true))
    qu8test::expect_conv_exact(c, [](const NodeContext& ctx) {
      return create_qconv2d_u8_igemm(ctx, simde_emulated::qu8_gemm_kernels_avx512vnni_8x32());
    });
}

TEST(Qu8ConvSimde, Avx512Vnni8x48MatchesReference) {
  if (!host_has_avx2()) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  for (const qu8test::ConvCase& c : qu8test::conv_cases(/*big=*/true))
    qu8test::expect_conv_exact(c, [](const NodeContext& ctx) {
      return create_qconv2d_u8_igemm(ctx, simde_emulated::qu8_gemm_kernels_avx512vnni_8x48());
    });
}

TEST(Qu8ConvSimde, AvxVnniMatchesReference) {
  if (!host_has_avx2()) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  for (const qu8test::ConvCase& c : qu8test::conv_cases(/*big=*/true))
    qu8test::expect_conv_exact(c, [](const NodeContext& ctx) {
      return create_qconv2d_u8_igemm(ctx, simde_emulated::qu8_gemm_kernels_avxvnni());
    });
}

TEST(Qu8ConvSimde, DepthwiseVnniRowsMatchReference) {
  if (!host_has_avx2()) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  for (const ::lowbit::Qu8DwKernel* k : {&simde_emulated::qu8_dwconv_avx512vnni(), &simde_emulated::qu8_dwconv_avxvnni()})
    for (const qu8test::ConvCase& c : qu8test::depthwise_cases()) {
      SCOPED_TRACE(k->isa);
      qu8test::expect_conv_exact(c, [k](const NodeContext& ctx) { return create_qconv2d_u8_dwconv(ctx, *k); });
    }
}

}  // namespace
}  // namespace lowbit
