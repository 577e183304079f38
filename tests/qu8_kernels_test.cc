// Every int8 kernel against its reference, byte for byte: QConv (AVX2 int16 kernels, and the
// VNNI kernels natively when the host has them; tests/simde covers them everywhere), QGemm, QAdd,
// plus hand-computed checks of the reference itself (rounding half to even, clamps, residual).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "lowbit/dispatch/registry.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/operators/qconv2d_u8.h"
#include "lowbit/target/target.h"
#include "qu8_test_support.h"

namespace lowbit {
namespace {

using qu8test::ConvCase;

TEST(Qu8Reference, QConvRoundsHalfToEvenAndClamps) {
  // 1x1 conv, one channel, x - zp_x = {1, 3, 5, 7}, w = 1, req_scale = 0.5: t = 0.5, 1.5, 2.5, 3.5
  // -> 0, 2, 2, 4 (+ zp_y 10); then act_max = 1.2 * s_y rounds to 1 -> clamp at 11.
  Graph g;
  Tensor x(DType::u8, {1, 1, 2, 2}), w(DType::i8, {1, 1, 1, 1});
  const uint8_t xs[4] = {21, 23, 25, 27};
  std::memcpy(x.data<uint8_t>(), xs, 4);
  w.data<int8_t>()[0] = 1;
  ValueId vx = g.add_value("x", DType::u8, x.shape(), true);
  g.value(vx).quant = QuantParams{{0.5f}, {20}, -1};
  ValueId vw = g.add_constant("w", w);
  g.value(vw).quant = QuantParams{{1.0f}, {0}, 0};
  ValueId vy = g.add_value("y", DType::u8, {1, 1, 2, 2}, true);
  g.value(vy).quant = QuantParams{{1.0f}, {10}, -1};
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{1, 1});
  g.add_node("QConv", "c", {vx, vw}, {vy}, a);
  Tensor y(DType::u8, {1, 1, 2, 2});
  std::vector<TensorView> in = {x.view(), w.view()}, out = {y.view()};
  find_reference("QConv")(g, g.nodes[0], in, out);
  EXPECT_EQ(std::vector<int>(y.data<uint8_t>(), y.data<uint8_t>() + 4), (std::vector<int>{10, 12, 12, 14}));
  g.nodes[0].attrs.set("act_max", 1.2f);
  find_reference("QConv")(g, g.nodes[0], in, out);
  EXPECT_EQ(std::vector<int>(y.data<uint8_t>(), y.data<uint8_t>() + 4), (std::vector<int>{10, 11, 11, 11}));
}

TEST(Qu8Reference, QConvMatchesFloatConvolution) {
  // The reference against a float evaluation of the same real-valued conv: within one step.
  ConvCase c;
  c.C = 5, c.M = 3, c.H = 6, c.W = 6, c.residual = true;
  qu8test::Built b = qu8test::build_qconv(c);
  const Tensor y = qu8test::run_reference(b);
  const Node& n = b.g.nodes[0];
  const Conv2dParams p = conv2d_params(b.g, n);
  const QuantParams &qx = *b.g.value(n.inputs[0]).quant, &qw = *b.g.value(n.inputs[1]).quant,
                    &qr = *b.g.value(n.inputs[3]).quant, &qy = *b.g.value(n.outputs[0]).quant;
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t oh = 0; oh < p.OH; ++oh)
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        double s = b.inputs[2].data<float>()[m];
        for (int64_t ci = 0; ci < p.C; ++ci)
          for (int64_t kh = 0; kh < p.KH; ++kh)
            for (int64_t kw = 0; kw < p.KW; ++kw) {
              const int64_t ih = oh - p.pad_top + kh, iw = ow - p.pad_left + kw;
              if (ih < 0 || iw < 0 || ih >= p.H || iw >= p.W) continue;
              const double xv = qx.scale[0] * (b.inputs[0].data<uint8_t>()[(ci * p.H + ih) * p.W + iw] - qx.zero_point[0]);
              const double wv = qw.scale[size_t(m)] * b.inputs[1].data<int8_t>()[((m * p.C + ci) * p.KH + kh) * p.KW + kw];
              s += xv * wv;
            }
        const int64_t o = (m * p.OH + oh) * p.OW + ow;
        s += qr.scale[0] * (b.inputs[3].data<uint8_t>()[o] - qr.zero_point[0]);
        const double q = std::clamp(std::nearbyint(s / qy.scale[0]) + qy.zero_point[0], 0.0, 255.0);
        EXPECT_NEAR(y.data<uint8_t>()[o], q, 1.0) << m << " " << oh << " " << ow;
      }
}

// ---- QConv fast kernels ----
// (x86 kernels; tests/neon_kernels_test.cc checks the AArch64 ones against the same cases)

#if defined(__x86_64__)
TEST(Qu8Conv, Avx2MatchesReference) {
  for (const ConvCase& c : qu8test::conv_cases(/*big=*/true))
    qu8test::expect_conv_exact(c, [](const NodeContext& ctx) { return create_qconv2d_u8_igemm_avx2(ctx); });
}

TEST(Qu8Conv, Avx512VnniMatchesReferenceNatively) {
  if (!host_target().has(Feature::avx512vnni) || !host_target().has(Feature::avx512bw))
    GTEST_SKIP() << "host lacks AVX-512 VNNI (tests/simde covers the kernel)";
  for (const ConvCase& c : qu8test::conv_cases(/*big=*/true))
    qu8test::expect_conv_exact(c, [](const NodeContext& ctx) { return create_qconv2d_u8_igemm_avx512vnni(ctx); });
}

TEST(Qu8Conv, Avx512Vnni8x32MatchesReferenceNatively) {
  if (!host_target().has(Feature::avx512vnni) || !host_target().has(Feature::avx512bw))
    GTEST_SKIP() << "host lacks AVX-512 VNNI (tests/simde covers the kernel)";
  for (const ConvCase& c : qu8test::conv_cases(/*big=*/true))
    qu8test::expect_conv_exact(c, [](const NodeContext& ctx) { return create_qconv2d_u8_igemm_avx512vnni_8x32(ctx); });
}

TEST(Qu8Conv, Avx512Vnni8x48MatchesReferenceNatively) {
  if (!host_target().has(Feature::avx512vnni) || !host_target().has(Feature::avx512bw))
    GTEST_SKIP() << "host lacks AVX-512 VNNI (tests/simde covers the kernel)";
  for (const ConvCase& c : qu8test::conv_cases(/*big=*/true))
    qu8test::expect_conv_exact(c, [](const NodeContext& ctx) { return create_qconv2d_u8_igemm_avx512vnni_8x48(ctx); });
}

TEST(Qu8Conv, AvxVnniMatchesReferenceNatively) {
  if (!host_target().has(Feature::avxvnni)) GTEST_SKIP() << "host lacks AVX-VNNI (tests/simde covers the kernel)";
  for (const ConvCase& c : qu8test::conv_cases(/*big=*/true))
    qu8test::expect_conv_exact(c, [](const NodeContext& ctx) { return create_qconv2d_u8_igemm_avxvnni(ctx); });
}

// Exact integer Winograd: byte-identical to the reference for odd sizes (a last tile half outside
// the image), odd channel counts (a zero channel completes the last pair), asymmetric pads, zero
// points 0 / 255 with all-extreme inputs and weights (|V| = 1020, |U'| = 1152), several K blocks,
// residual and clamps, batch 2, up to the channel bound of the int32 argument.
TEST(Qu8Conv, WinogradAvx2MatchesReference) {
  if (!host_target().has(Feature::avx2)) GTEST_SKIP() << "host lacks AVX2";
  const std::vector<ConvCase> cases = qu8test::winograd_cases();
  for (const ConvCase& c : cases) {
    qu8test::Built b = qu8test::build_qconv(c);
    Target t;
    NodeContext ctx{b.g, b.g.nodes[0], t, 2};
    ASSERT_EQ(check_qconv2d_u8_winograd(ctx), "") << c.str();
    qu8test::expect_conv_exact(c, [](const NodeContext& ctx) { return create_qconv2d_u8_winograd_avx2(ctx); });
  }
}

TEST(Qu8Conv, DepthwiseEveryRowMatchesReference) {
  const int ran = qu8test::expect_every_depthwise_row_exact(candidates_for("QConv"));
  if (host_target().has(Feature::avx2)) {
    EXPECT_GE(ran, 1);
  }
}

TEST(Qu8Conv, DepthwiseRefusesWhatItsPlanCannotHold) {
  qu8test::ConvCase c;
  c.C = c.M = c.group = 4, c.H = c.W = 20;
  c.DH = c.DW = 2, c.pads = {2, 2, 2, 2};
  qu8test::Built b = qu8test::build_qconv(c);
  NodeContext ctx{b.g, b.g.nodes[0], host_target(), 1};
  EXPECT_NE(check_qconv2d_u8_dwconv(ctx).find("dilation 2x2, needs 1"), std::string::npos)
      << check_qconv2d_u8_dwconv(ctx);
  c.DH = c.DW = 1, c.KH = c.KW = 15, c.pads = {7, 7, 7, 7};  // 15 rows x 8 pairs = 120 groups
  b = qu8test::build_qconv(c);
  NodeContext ctx2{b.g, b.g.nodes[0], host_target(), 1};
  EXPECT_NE(check_qconv2d_u8_dwconv(ctx2).find("more than 64 tap pairs"), std::string::npos)
      << check_qconv2d_u8_dwconv(ctx2);
}
#endif  // __x86_64__

TEST(Qu8Conv, ChecksGiveReasons) {
  ConvCase c;
  qu8test::Built b = qu8test::build_qconv(c);
  Target t;
  b.g.value(b.g.nodes[0].inputs[0]).dtype = DType::f32;
  EXPECT_EQ(check_qconv2d_u8_igemm(NodeContext{b.g, b.g.nodes[0], t, 1}), "input dtype f32, needs u8");
  b.g.value(b.g.nodes[0].inputs[0]).dtype = DType::u8;
  // 4- and 2-bit codes are accepted (unpacked once at creation); other dtypes are not.
  b.g.value(b.g.nodes[0].inputs[1]).dtype = DType::i4;
  EXPECT_EQ(check_qconv2d_u8_igemm(NodeContext{b.g, b.g.nodes[0], t, 1}), "");
  b.g.value(b.g.nodes[0].inputs[1]).dtype = DType::i32;
  EXPECT_EQ(check_qconv2d_u8_igemm(NodeContext{b.g, b.g.nodes[0], t, 1}), "weights dtype i32, needs i8, i4, i2 or b1");
  b.g.value(b.g.nodes[0].inputs[1]).dtype = DType::i8;
  b.g.value(b.g.nodes[0].inputs[1]).quant->zero_point[0] = 3;
  EXPECT_EQ(check_qconv2d_u8_igemm(NodeContext{b.g, b.g.nodes[0], t, 1}), "weights zero point 3, needs symmetric (0)");
}

// ---- QGemm ----

// The build's gemv kernel (AVX2 or NEON: one driver, a dot-product function per ISA).
std::unique_ptr<Kernel> create_gemv(const NodeContext& ctx) {
#if defined(__x86_64__)
  return create_qgemm_u8_gemv_avx2(ctx);
#else
  return create_qgemm_u8_gemv_neon(ctx);
#endif
}

struct GemmCase {
  int64_t M, K, N;
  bool bias, f32_out;
  int32_t zp_x;
  qu8test::Fill fill;
};

void expect_gemm_exact(const GemmCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  Graph g;
  Tensor a(DType::u8, {c.M, c.K}), w(DType::i8, {c.N, c.K}), bias(DType::f32, {c.N});
  for (int64_t i = 0; i < a.numel(); ++i)
    a.data<uint8_t>()[i] = c.fill == qu8test::Fill::random ? uint8_t(rng()) : c.fill == qu8test::Fill::mix ? (rng() & 1) * 255 : 255;
  for (int64_t i = 0; i < w.numel(); ++i)
    w.data<int8_t>()[i] = c.fill == qu8test::Fill::random ? int8_t(rng()) : c.fill == qu8test::Fill::mix ? (rng() & 1 ? 127 : -128) : -128;
  const double typical = c.fill == qu8test::Fill::random ? std::sqrt(double(c.K)) * 5500.0 : double(c.K) * 32640.0;
  const float s_x = 0.05f, s_y = static_cast<float>(s_x * 0.01 * typical / 100.0);
  for (int64_t n = 0; n < c.N; ++n) bias.data<float>()[n] = (float(rng() % 1000) - 500.0f) * s_y * 0.1f;
  ValueId va = g.add_value("a", DType::u8, a.shape(), true);
  g.value(va).quant = QuantParams{{s_x}, {c.zp_x}, -1};
  ValueId vw = g.add_constant("w", w);
  QuantParams qw;
  for (int64_t n = 0; n < c.N; ++n) qw.scale.push_back(0.01f * (1 + n % 3)), qw.zero_point.push_back(0);
  qw.axis = 0;
  g.value(vw).quant = qw;
  std::vector<ValueId> ins = {va, vw};
  if (c.bias) ins.push_back(g.add_constant("b", bias));
  ValueId vy = g.add_value("y", c.f32_out ? DType::f32 : DType::u8, {c.M, c.N}, true);
  if (!c.f32_out) g.value(vy).quant = QuantParams{{s_y}, {120}, -1};
  Attributes at;
  at.set("transB", int64_t{1});
  if (!c.f32_out) at.set("act_min", 0.0f);
  g.add_node("QGemm", "fc", ins, {vy}, at);
  const Node& n = g.nodes[0];
  Target t;
  NodeContext ctx{g, n, t, 2};
  ASSERT_EQ(check_qgemm_u8_gemv(ctx), "");
  std::vector<TensorView> in = {a.view(), w.view()};
  if (c.bias) in.push_back(bias.view());
  Tensor ref(g.value(vy).dtype, {c.M, c.N});
  std::vector<TensorView> rout = {ref.view()};
  find_reference("QGemm")(g, n, in, rout);
  auto k = create_gemv(ctx);
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    Tensor y(g.value(vy).dtype, {c.M, c.N});
    std::vector<TensorView> out = {y.view()};
    k->run(in, out, pool);
    ASSERT_EQ(std::memcmp(y.raw(), ref.raw(), static_cast<size_t>(y.nbytes())), 0)
        << "M" << c.M << " K" << c.K << " N" << c.N << " threads " << threads;
  }
}

TEST(Qu8Gemm, GemvMatchesReference) {
  uint32_t seed = 1;
  for (GemmCase c : {GemmCase{1, 2048, 1000, true, true, 128, qu8test::Fill::random},
                     GemmCase{1, 2048, 1000, true, false, 3, qu8test::Fill::random},
                     GemmCase{3, 17, 5, false, false, 0, qu8test::Fill::random},
                     GemmCase{2, 33, 70, true, false, 255, qu8test::Fill::random},
                     GemmCase{1, 1, 1, true, true, 128, qu8test::Fill::random},
                     GemmCase{1, 4608, 67, true, false, 0, qu8test::Fill::extreme_min},
                     GemmCase{1, 9000, 9, false, true, 0, qu8test::Fill::mix},
                     GemmCase{2, 40, 13, true, false, 7, qu8test::Fill::random}})  // 8 + 4 + 1 rows
    expect_gemm_exact(c, seed++);
}

// ---- QAdd ---- (every row this build has and this CPU runs: AVX2 here, NEON under qemu)

TEST(Qu8Add, EveryRowMatchesReference) {
  int rows = 0;
  for (const KernelCandidate* kc : candidates_for("QAdd")) {
    bool runs = kc->create && !kc->name.starts_with("reference");
    for (Feature f : kc->features) runs = runs && host_target().has(f);
    if (!runs) continue;
    ++rows;
    std::mt19937 rng(7);
    for (int64_t numel : {1, 7, 8, 9, 64, 1000, 50177})
      for (int variant = 0; variant < 4; ++variant) {
        Graph g;
        Shape s = {1, numel};
        Tensor a(DType::u8, s), b(DType::u8, s);
        for (int64_t i = 0; i < numel; ++i) {
          a.data<uint8_t>()[i] = variant == 3 ? 255 : uint8_t(rng());
          b.data<uint8_t>()[i] = variant == 3 ? 0 : uint8_t(rng());
        }
        ValueId va = g.add_value("a", DType::u8, s, true), vb = g.add_value("b", DType::u8, s, true);
        g.value(va).quant = QuantParams{{0.031f}, {variant == 3 ? 0 : 128}, -1};
        g.value(vb).quant = QuantParams{{0.047f}, {variant == 3 ? 255 : 17}, -1};
        ValueId vy = g.add_value("y", DType::u8, s, true);
        g.value(vy).quant = QuantParams{{0.05f}, {variant == 1 ? 0 : 99}, -1};
        Attributes at;
        if (variant == 1) at.set("act_min", 0.0f);
        if (variant == 2) at.set("act_max", 3.0f);
        g.add_node("QAdd", "add", {va, vb}, {vy}, at);
        Target t;
        NodeContext ctx{g, g.nodes[0], t, 2};
        ASSERT_EQ(check_qadd_u8(ctx), "");
        std::vector<TensorView> in = {a.view(), b.view()};
        Tensor ref(DType::u8, s), y(DType::u8, s);
        std::vector<TensorView> rout = {ref.view()}, out = {y.view()};
        find_reference("QAdd")(g, g.nodes[0], in, rout);
        ThreadPool pool(2);
        kc->create(ctx)->run(in, out, pool);
        ASSERT_EQ(std::memcmp(y.raw(), ref.raw(), size_t(numel)), 0) << kc->name << " " << numel << " variant " << variant;
      }
  }
  if (host_target().has(Feature::avx2) || host_target().has(Feature::neon)) {
    EXPECT_GE(rows, 1);
  }
}

}  // namespace
}  // namespace lowbit
