// The AArch64 kernels: int8 convolution (smlal and sdot) byte for byte against the reference over
// the qu8 case list (odd shapes, zero points 0 / 128 / 255, u8 255 x s8 -128 extremes, K blocks,
// residual and clamps), the fp32 micro-kernels against scalar sums at every tile shape, host
// detection and dispatch. The fp32 conv / gemm / matmul drivers on NEON run the fp32 case lists of
// tests/f32_kernels_test.cc. The dispatch rows themselves are checked in every build: an x86-64
// lowbit chooses the NEON kernels for an AArch64 target as the AArch64 build does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "lowbit/dispatch/registry.h"
#include "lowbit/operators/conv2d_f32.h"
#include "lowbit/operators/qconv2d_u8.h"
#include "qu8_test_support.h"

namespace lowbit {
namespace {

using qu8test::ConvCase;

const Rejection* rejection_of(const Choice& c, const std::string& name) {
  for (const Rejection& r : c.rejected)
    if (r.candidate->name == name) return &r;
  return nullptr;
}

#if defined(__aarch64__)
constexpr bool kAarch64Build = true;
#else
constexpr bool kAarch64Build = false;
#endif

TEST(NeonDispatch, QConvRowsAreRankedAndRejectedForArchReasons) {
  ConvCase c;
  qu8test::Built b = qu8test::build_qconv(c);
  const Node& n = b.g.nodes[0];
  const std::string dot = "qu8-qc8w-conv2d-igemm-6x16-neondot", neon = "qu8-qc8w-conv2d-igemm-6x16-neon";

  Target x86 = parse_target("x86-64-v3");
  Choice cx = select_kernel(NodeContext{b.g, n, x86, 1});
  ASSERT_NE(rejection_of(cx, dot), nullptr);
  EXPECT_EQ(rejection_of(cx, dot)->reason, "needs aarch64: target is x86-64");
  EXPECT_EQ(rejection_of(cx, neon)->reason, "needs aarch64: target is x86-64");

  Target a72 = parse_target("cortex-a72"), n1 = parse_target("neoverse-n1");
  Choice ca = select_kernel(NodeContext{b.g, n, a72, 1});
  Choice cn = select_kernel(NodeContext{b.g, n, n1, 1});
  EXPECT_EQ(rejection_of(ca, dot)->reason, "needs neon+dotprod: target cortex-a72 lacks dotprod");
  // Every build chooses the AArch64 rows for an AArch64 target, whether or not it can create them:
  // an x86-64 lowbit quantizing for cortex-a72 plans what the AArch64 build will run.
  EXPECT_EQ(ca.chosen->name, neon);
  EXPECT_EQ(cn.chosen->name, dot);  // dot product ranks above the int16 kernel
  EXPECT_EQ(rejection_of(cn, neon)->reason, "applies, but ranked below " + dot);
  EXPECT_EQ(ca.chosen->create != nullptr, kAarch64Build);
}

#if defined(__aarch64__)

TEST(NeonTarget, HostDetectionAndIsaCap) {
  const Target t = host_target();
  EXPECT_EQ(t.arch, Arch::aarch64);
  EXPECT_TRUE(t.has(Feature::neon));
  const char* cap = std::getenv("LOWBIT_ISA");
  if (cap && std::string(cap) == "neon") {
    EXPECT_FALSE(t.has(Feature::dotprod));
    EXPECT_FALSE(t.has(Feature::i8mm));
  }
  EXPECT_FALSE(t.has(Feature::avx2));
}

TEST(NeonDispatch, HostPicksTheBestNeonKernels) {
  ConvCase c;
  qu8test::Built b = qu8test::build_qconv(c);
  const Target host = host_target();
  const Choice q = select_kernel(NodeContext{b.g, b.g.nodes[0], host, 1});
  const std::string want = host.has(Feature::dotprod) ? "qu8-qc8w-conv2d-igemm-6x16-neondot" : "qu8-qc8w-conv2d-igemm-6x16-neon";
  EXPECT_EQ(q.chosen->name, want);
}

// ---- int8 ----

TEST(NeonQu8, IgemmSmlalMatchesReference) {
  for (const ConvCase& c : qu8test::conv_cases(/*big=*/true))
    qu8test::expect_conv_exact(c, [](const NodeContext& ctx) { return create_qconv2d_u8_igemm_neon(ctx); });
}

TEST(NeonQu8, IgemmDotprodMatchesReference) {
  if (!host_target().has(Feature::dotprod)) GTEST_SKIP() << "host (or LOWBIT_ISA) lacks dotprod";
  for (const ConvCase& c : qu8test::conv_cases(/*big=*/true))
    qu8test::expect_conv_exact(c, [](const NodeContext& ctx) { return create_qconv2d_u8_igemm_neondot(ctx); });
}

TEST(NeonQu8, DotprodShiftCorrectionAtEveryZeroPoint) {
  // The sdot kernel sums (x - 128) * w and corrects by (128 - zp_x) * sum w: every zero point,
  // with all-255 / all-0 inputs against all -128 / 127 weights, where a wrong correction shows.
  if (!host_target().has(Feature::dotprod)) GTEST_SKIP() << "host (or LOWBIT_ISA) lacks dotprod";
  for (int32_t zp : {0, 1, 127, 128, 129, 254, 255})
    for (qu8test::Fill f : {qu8test::Fill::extreme_min, qu8test::Fill::extreme_max, qu8test::Fill::mix}) {
      ConvCase c;
      c.fill = f;
      c.zp_x = zp;
      c.C = 37;  // K = 333: not a multiple of the 4-value k groups
      c.M = 7;
      c.H = 6, c.W = 5;
      c.seed = static_cast<uint32_t>(zp * 3 + static_cast<int>(f));
      qu8test::expect_conv_exact(c, [](const NodeContext& ctx) { return create_qconv2d_u8_igemm_neondot(ctx); });
      qu8test::expect_conv_exact(c, [](const NodeContext& ctx) { return create_qconv2d_u8_igemm_neon(ctx); });
    }
}

// ---- fp32 micro-kernels ----

// Every NEON depthwise row (smlal-free int16 pairs; sdot where the CPU has it) on the sweep.
TEST(NeonQu8, DepthwiseEveryRowMatchesReference) {
  EXPECT_GE(qu8test::expect_every_depthwise_row_exact(candidates_for("QConv")), 1);
}

TEST(NeonF32, MicroKernelsMatchScalarSums) {
  const F32GemmKernels& ks = f32_gemm_kernels_neon();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (int nr : {ks.nr, ks.nr_tail})
    for (int mr = 1; mr <= ks.mr; ++mr)
      for (size_t kc : {1, 2, 3, 17, 64})
        for (size_t nc : {size_t(1), size_t(3), size_t(4), size_t(nr - 1), size_t(nr)})
          for (int variant = 0; variant < 4; ++variant) {
            // Variant 3 reads B in place, rows ldb apart (an unpacked 1x1 conv input).
            const size_t ldb = variant == 3 ? size_t(nr) + 3 : size_t(nr);
            std::vector<float> a(kc * mr), b(kc * ldb), rb(mr), cb(nr), c(mr * 40, 7.0f);
            for (float& v : a) v = d(rng);
            for (float& v : b) v = d(rng);
            for (float& v : rb) v = d(rng);
            for (float& v : cb) v = d(rng);
            for (size_t i = 0; i < c.size(); ++i) c[i] = d(rng);
            const std::vector<float> c0 = c;
            F32GemmEpilogue e;
            if (variant >= 1) {  // accumulate into c (init aliases c), both biases
              e.init = c.data();
              e.ld_init = 40;
              e.row_bias = rb.data();
              e.col_bias = cb.data();
            }
            if (variant >= 2) e.min = -0.5f, e.max = 0.25f;
            if (variant == 3) e.ldb = ldb;
            (nr == ks.nr ? ks.main : ks.tail)[mr](nc, kc, a.data(), b.data(), c.data(), 40, e);
            for (int r = 0; r < mr; ++r)
              for (int j = 0; j < 40; ++j) {
                const float got = c[r * 40 + j];
                if (j >= static_cast<int>(nc)) {
                  ASSERT_EQ(got, c0[r * 40 + j]) << "column past nc written: mr " << mr << " nr " << nr << " nc " << nc;
                  continue;
                }
                double want = 0;
                for (size_t k = 0; k < kc; ++k) want += double(a[k * mr + r]) * b[k * ldb + j];
                if (variant >= 1) want += double(c0[r * 40 + j]) + rb[r] + cb[j];
                if (variant >= 2) want = std::min(std::max(want, -0.5), 0.25);
                ASSERT_NEAR(got, want, 1e-5 * (1.0 + double(kc)))
                    << "mr " << mr << " nr " << nr << " kc " << kc << " nc " << nc << " variant " << variant;
              }
          }
}

TEST(NeonF32, Im2colPackCopiesRunsAndZeroesTheRest) {
  const F32GemmKernels& ks = f32_gemm_kernels_neon();
  std::vector<float> x(400);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  const int64_t koff[3] = {0, 50, 101};
  for (size_t stride : {1, 2, 3})
    for (int32_t len : {16, 11, 5, 1}) {
      const F32Im2colRun runs[2] = {{7, 0, std::min(len, 8)}, {200, std::min(len, 8), len - std::min(len, 8)}};
      const size_t nruns = len > 8 ? 2 : 1, nr = len > 8 ? 16 : 8;
      std::vector<float> b(3 * nr, -1.0f);
      ks.im2col(3, x.data(), koff, runs, nruns, stride, nr, b.data());
      for (size_t k = 0; k < 3; ++k)
        for (size_t j = 0; j < nr; ++j) {
          float want = 0.0f;
          for (size_t s = 0; s < nruns; ++s)
            if (j >= size_t(runs[s].dst) && j < size_t(runs[s].dst + runs[s].len))
              want = x[size_t(koff[k] + runs[s].src) + (j - runs[s].dst) * stride];
          ASSERT_EQ(b[k * nr + j], want) << "stride " << stride << " len " << len << " k " << k << " j " << j;
        }
    }
}

#endif  // __aarch64__

}  // namespace
}  // namespace lowbit
