// The VNNI kernels, compiled against SIMDe (no VNNI instructions needed), against the reference:
// same cases as tests/qu8_kernels_test.cc, through the real driver.
#include <gtest/gtest.h>

#include "lowbit/operators/qconv2d_subbyte.h"
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

// 4- and 2-bit weights kept packed: unpacked in registers by the 8 x 32 / 8 x 48 tiles (their
// weight_bits sets), expanded per run for the 16 x 16 and AVX-VNNI sets.
TEST(Qu8ConvSimde, PackedSubbyteWeightsMatchReference) {
  if (!host_has_avx2()) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  using Make = const Qu8GemmKernels& (*)(int);
  // (The activation codes do not change these kernels' path: two pairs cover the weight widths.)
  for (auto [w, a] : {std::pair{DType::i4, DType::u8}, std::pair{DType::i2, DType::u2}}) {
      const int bits = bit_width(w);
      for (Make make : {Make{simde_emulated::qu8_gemm_kernels_avx512vnni_8x32},
                        Make{simde_emulated::qu8_gemm_kernels_avx512vnni_8x48}})
        for (const qu8test::ConvCase& c : qu8test::conv_cases(/*big=*/true))
          qu8test::expect_subbyte_conv_exact(c, w, a, [&](const NodeContext& ctx) {
            return create_qconv2d_u8_igemm(ctx, make(bits), /*packed_weights=*/true);
          });
      for (const Qu8GemmKernels* ks :
           {&simde_emulated::qu8_gemm_kernels_avx512vnni(), &simde_emulated::qu8_gemm_kernels_avxvnni()})
        for (const qu8test::ConvCase& c : qu8test::conv_cases(/*big=*/true))
          qu8test::expect_subbyte_conv_exact(c, w, a, [&](const NodeContext& ctx) {
            return create_qconv2d_u8_igemm(ctx, *ks, /*packed_weights=*/true);
          });
    }
}

// The narrow-code Winograd F(2x2, 3x3) on the VNNI tiles: 3x3 stride-1 cases with enough tiles,
// every pad, channel tails of its quads, zero points, residual and clamps.
TEST(Qu8ConvSimde, NarrowCodeWinogradMatchesReference) {
  if (!host_has_avx2()) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  int ran = 0;
  for (auto [w, a] : {std::pair{DType::i4, DType::u4}, std::pair{DType::i2, DType::u2}})
    for (const qu8test::ConvCase& c : qu8test::winograd_cases()) {
      qu8test::expect_subbyte_conv_exact(c, w, a, [](const NodeContext& ctx) {
        return create_qconv2d_qsub_winograd(ctx, simde_emulated::qu8_winograd_u8x4_avx512vnni());
      });
      ++ran;
    }
  EXPECT_GT(ran, 0);
}

// Group-wise weight scales on the 8 x 32 VNNI tiles (the qbw row's set): one K block per group.
TEST(Qu8ConvSimde, GroupWiseWeightsMatchReference) {
  if (!host_has_avx2()) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  for (auto [w, a] : {std::pair{DType::i4, DType::u8}, std::pair{DType::i8, DType::u8}})
    for (const qu8test::ConvCase& c : qu8test::grouped_cases()) {
      qu8test::Built b = qu8test::build_qconv(c);
      qu8test::to_subbyte(b, w, a, /*packed=*/true, c.seed + 5);
      qu8test::to_grouped(b, 16, c.seed + 7);
      const Node& n = b.g.nodes[static_cast<size_t>(b.node)];
      Target t;
      NodeContext ctx{b.g, n, t, 2};
      ASSERT_EQ(check_qconv2d_grouped_igemm(ctx, 4), "") << c.str();
      const Tensor ref = qu8test::run_reference(b);
      auto k = create_qconv2d_u8_igemm(ctx, simde_emulated::qu8_gemm_kernels_avx512vnni_8x32(), true);
      std::vector<TensorView> in = qu8test::views(b.inputs, n.inputs.size());
      for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        Tensor y(DType::u8, ref.shape());
        std::vector<TensorView> out = {y.view()};
        k->run(in, out, pool);
        ASSERT_EQ(std::memcmp(y.raw(), ref.raw(), static_cast<size_t>(y.nbytes())), 0) << c.str() << " " << threads;
      }
    }
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
