// ONNX models that are already quantized (QDQ and QOperator forms) run on lowbit's int8 ops, and
// lowbit's quantized graphs export back to QDQ.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <random>

#include "lowbit/frontend/onnx/onnx_export_qdq.h"
#include "lowbit/frontend/onnx/onnx_import.h"
#include "lowbit/frontend/onnx/onnx_tensor.h"
#include "lowbit/ir/codes.h"
#include "lowbit/quant/precision.h"
#include "lowbit/quant/quantize.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/passes/qdq.h"
#include "lowbit/quant/guard.h"

using namespace lowbit;
using ::testing::HasSubstr;

namespace {

// Small builder for QDQ test graphs.
struct B {
  Graph g;
  std::mt19937 rng{7};

  ValueId f32_scalar(float v) {
    Tensor t(DType::f32, {});
    t.data<float>()[0] = v;
    return g.add_constant(g.unique_name("s"), t);
  }
  ValueId zp(DType dt, int32_t v) {
    Tensor t(dt, {});
    if (dt == DType::u8) t.data<uint8_t>()[0] = static_cast<uint8_t>(v);
    else t.data<int8_t>()[0] = static_cast<int8_t>(v);
    return g.add_constant(g.unique_name("z"), t);
  }
  ValueId q(ValueId x, float s, int32_t z, DType dt = DType::u8) {
    ValueId y = g.add_value(g.unique_name("q"));
    g.add_node("QuantizeLinear", g.unique_name("Q"), {x, f32_scalar(s), zp(dt, z)}, {y});
    return y;
  }
  ValueId dq(ValueId x, float s, int32_t z, DType dt = DType::u8) {
    ValueId y = g.add_value(g.unique_name("dq"));
    g.add_node("DequantizeLinear", g.unique_name("DQ"), {x, f32_scalar(s), zp(dt, z)}, {y});
    return y;
  }
  ValueId qdq(ValueId x, float s, int32_t z, DType dt = DType::u8) { return dq(q(x, s, z, dt), s, z, dt); }
  ValueId op(const std::string& type, std::vector<ValueId> in, Attributes a = {}) {
    ValueId y = g.add_value(g.unique_name(type + "_out"));
    g.add_node(type, g.unique_name(type), std::move(in), {y}, std::move(a));
    return y;
  }
  // Per-channel (axis) i8 weights of `shape`, their scales, and DequantizeLinear.
  std::vector<float> wscale;
  ValueId dq_weights(const Shape& shape, int64_t axis, int lo = -127, int hi = 127) {
    Tensor w(DType::i8, shape);
    std::uniform_int_distribution<int> d(lo, hi);
    for (int64_t i = 0; i < w.numel(); ++i) w.data<int8_t>()[i] = static_cast<int8_t>(d(rng));
    const int64_t M = shape[static_cast<size_t>(axis)];
    Tensor s(DType::f32, {M}), z(DType::i8, {M});
    wscale.clear();
    for (int64_t m = 0; m < M; ++m) wscale.push_back(s.data<float>()[m] = 0.002f + 0.0005f * static_cast<float>(m % 5));
    ValueId y = g.add_value(g.unique_name("w"));
    Attributes a;
    a.set("axis", axis);
    g.add_node("DequantizeLinear", g.unique_name("DQw"),
               {g.add_constant(g.unique_name("w_i8"), w), g.add_constant(g.unique_name("w_s"), s),
                g.add_constant(g.unique_name("w_z"), z)},
               {y}, a);
    return y;
  }
  // i32 bias in units of s_x * s_w[m], dequantized.
  ValueId dq_bias(int64_t M, float s_x) {
    Tensor b(DType::i32, {M}), s(DType::f32, {M});
    std::uniform_int_distribution<int> d(-3000, 3000);
    for (int64_t m = 0; m < M; ++m) {
      b.data<int32_t>()[m] = d(rng);
      s.data<float>()[m] = s_x * wscale[size_t(m)];
    }
    ValueId y = g.add_value(g.unique_name("b"));
    Attributes a;
    a.set("axis", int64_t{0});
    g.add_node("DequantizeLinear", g.unique_name("DQb"),
               {g.add_constant(g.unique_name("b_i32"), b), g.add_constant(g.unique_name("b_s"), s)}, {y}, a);
    return y;
  }
  ValueId f32_const(const Shape& shape, float scale) {
    Tensor t(DType::f32, shape);
    std::uniform_real_distribution<float> d(-scale, scale);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
    return g.add_constant(g.unique_name("c"), t);
  }
};

Attributes conv_attrs(int64_t k, int64_t pad) {
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{k, k});
  a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  return a;
}

// The QDQ form of a small CNN: conv+relu, maxpool, 1x1 conv + residual add, global pool, gemm.
// `act` is the activation type: u8, or i8 (zero points shifted by -128).
Graph qdq_net(DType act) {
  B b;
  const int32_t off = act == DType::i8 ? -128 : 0;
  ValueId x = b.g.add_value("input", DType::f32, {1, 8, 10, 10}, true);
  b.g.inputs.push_back(x);
  const float s_in = 0.01f, s1 = 0.02f, s2 = 0.03f, s3 = 0.035f, s4 = 0.05f;
  ValueId xd = b.qdq(x, s_in, 128 + off, act);
  ValueId w1 = b.dq_weights({16, 8, 3, 3}, 0);
  ValueId c1 = b.op("Conv", {xd, w1, b.dq_bias(16, s_in)}, conv_attrs(3, 1));
  ValueId r1 = b.qdq(b.op("Relu", {c1}), s1, 0 + off, act);
  Attributes mp;
  mp.set("kernel_shape", std::vector<int64_t>{2, 2});
  mp.set("strides", std::vector<int64_t>{2, 2});
  ValueId p1 = b.qdq(b.op("MaxPool", {r1}, mp), s1, 0 + off, act);
  ValueId w2 = b.dq_weights({16, 16, 1, 1}, 0);
  ValueId c2 = b.qdq(b.op("Conv", {p1, w2, b.f32_const({16}, 0.2f)}, conv_attrs(1, 0)), s2, 120 + off, act);
  ValueId a = b.qdq(b.op("Relu", {b.op("Add", {c2, p1})}), s3, 0 + off, act);
  ValueId gp = b.qdq(b.op("GlobalAveragePool", {a}), s3, 0 + off, act);
  ValueId fl = b.op("Flatten", {gp});
  ValueId w3 = b.dq_weights({10, 16}, 0);
  Attributes ga;
  ga.set("transB", int64_t{1});
  ValueId y = b.qdq(b.op("Gemm", {fl, w3, b.f32_const({10}, 0.1f)}, ga), s4, 128 + off, act);
  b.g.outputs.push_back(y);
  return std::move(b.g);
}

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (auto& node : g.nodes) n += node.op == op;
  return n;
}

std::unique_ptr<CompiledModel> compile(const Graph& g, bool optimize) {
  CompileOptions o;
  o.threads = 2;
  o.optimize = optimize;
  return CompiledModel::compile(g, o);
}

// Largest difference in units of `step`.
double max_steps(const Tensor& a, const Tensor& b, double step) {
  EXPECT_EQ(a.shape(), b.shape());
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double d = a.dtype() == DType::f32 ? std::fabs(double(a.data<float>()[i]) - b.data<float>()[i])
                                       : std::abs(int(a.data<uint8_t>()[i]) - int(b.data<uint8_t>()[i]));
    m = std::max(m, d / step);
  }
  return m;
}

double cosine(const Tensor& a, const Tensor& b) {
  double d = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    d += double(a.data<float>()[i]) * b.data<float>()[i];
    na += double(a.data<float>()[i]) * a.data<float>()[i];
    nb += double(b.data<float>()[i]) * b.data<float>()[i];
  }
  return d / std::sqrt(na * nb);
}

bool on_simd_kernel(const CompiledModel& m, const std::string& op) {
  for (const Step& s : m.steps())
    if (m.graph().nodes[size_t(s.node)].op == op && s.choice.chosen->features.empty()) return false;
  return true;
}

}  // namespace

TEST(Qdq, NoOpWithoutQuantizeNodes) {
  B b;
  ValueId x = b.g.add_value("x", DType::f32, {1, 4}, true);
  b.g.inputs.push_back(x);
  b.g.outputs.push_back(b.op("Relu", {x}));
  const size_t before = b.g.nodes.size();
  EXPECT_EQ(fuse_qdq(b.g), 0);
  EXPECT_EQ(b.g.nodes.size(), before);
}

class QdqNet : public ::testing::TestWithParam<DType> {};

TEST_P(QdqNet, FusesIntoQuantizedOpsAndMatchesTheUnfusedGraph) {
  Graph g = qdq_net(GetParam());
  auto ref = compile(g, false);
  auto fast = compile(g, true);
  const Graph& fg = fast->graph();
  EXPECT_EQ(count_ops(fg, "QConv"), 2);
  EXPECT_EQ(count_ops(fg, "QAdd"), 1);
  EXPECT_EQ(count_ops(fg, "QGemm"), 1);
  EXPECT_EQ(count_ops(fg, "Conv"), 0);
  EXPECT_EQ(count_ops(fg, "Gemm"), 0);
  // Q / DQ stay around the input, the output and the pools (u8 pooling has no SIMD kernel).
  EXPECT_EQ(count_ops(fg, "QuantizeLinear"), 3);
  EXPECT_EQ(count_ops(fg, "DequantizeLinear"), 3);
  if (host_target().has(Feature::avx2)) {
    EXPECT_TRUE(on_simd_kernel(*fast, "QConv"));
    EXPECT_TRUE(on_simd_kernel(*fast, "QAdd"));
  }
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    auto in = synthetic_inputs(g, seed);
    // The output is dequantized u8 (scale 0.05): within one step of the reference execution.
    EXPECT_LE(max_steps(ref->run(in)[0], fast->run(in)[0], 0.05), 1.0 + 1e-4) << "seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Activations, QdqNet, ::testing::Values(DType::u8, DType::i8),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// QOperator form: QuantizeLinear -> QLinearConv -> QLinearMatMul-free tail -> DequantizeLinear.
Graph qlinear_conv_net(DType act, DType wdt, int32_t wzp, bool bias) {
  B b;
  const int32_t off = act == DType::i8 ? -128 : 0;
  ValueId x = b.g.add_value("input", DType::f32, {1, 6, 9, 9}, true);
  b.g.inputs.push_back(x);
  ValueId xq = b.q(x, 0.01f, 120 + off, act);
  const int64_t M = 12;
  Tensor w(wdt, {M, 6, 3, 3}), ws(DType::f32, {M}), wz(wdt, {M});
  std::uniform_int_distribution<int> d(wdt == DType::u8 ? 0 : -128, wdt == DType::u8 ? 255 : 127);
  for (int64_t i = 0; i < w.numel(); ++i) {
    if (wdt == DType::u8) w.data<uint8_t>()[i] = static_cast<uint8_t>(d(b.rng));
    else w.data<int8_t>()[i] = static_cast<int8_t>(d(b.rng) / 2);
  }
  for (int64_t m = 0; m < M; ++m) {
    ws.data<float>()[m] = 0.001f * static_cast<float>(1 + m % 4);
    if (wdt == DType::u8) wz.data<uint8_t>()[m] = static_cast<uint8_t>(wzp);
    else wz.data<int8_t>()[m] = static_cast<int8_t>(wzp);
  }
  std::vector<ValueId> in{xq,
                          b.f32_scalar(0.01f),
                          b.zp(act, 120 + off),
                          b.g.add_constant("w", w),
                          b.g.add_constant("w_scale", ws),
                          b.g.add_constant("w_zero_point", wz),
                          b.f32_scalar(0.04f),
                          b.zp(act, 100 + off)};
  if (bias) {
    Tensor bt(DType::i32, {M});
    for (int64_t m = 0; m < M; ++m) bt.data<int32_t>()[m] = static_cast<int32_t>(m * 977 % 5001) - 2500;
    in.push_back(b.g.add_constant("bias", bt));
  }
  ValueId y = b.g.add_value("y");
  Attributes a = conv_attrs(3, 1);
  a.set("strides", std::vector<int64_t>{2, 2});
  b.g.add_node("QLinearConv", "qconv", in, {y}, a);
  b.g.outputs.push_back(b.dq(y, 0.04f, 100 + off, act));
  return std::move(b.g);
}

TEST(Qdq, QLinearConvConvertsAndMatchesTheReference) {
  struct Case {
    DType act, w;
    int32_t wzp;
    bool bias;
  };
  for (Case c : {Case{DType::u8, DType::i8, 0, true}, Case{DType::i8, DType::i8, 0, true},
                 Case{DType::u8, DType::u8, 128, false}, Case{DType::i8, DType::i8, 3, true}}) {
    SCOPED_TRACE(std::string(dtype_name(c.act)) + " x " + dtype_name(c.w) + " wzp " + std::to_string(c.wzp));
    Graph g = qlinear_conv_net(c.act, c.w, c.wzp, c.bias);
    auto ref = compile(g, false);
    auto fast = compile(g, true);
    EXPECT_EQ(count_ops(fast->graph(), "QConv"), 1);
    EXPECT_EQ(count_ops(fast->graph(), "QLinearConv"), 0);
    if (host_target().has(Feature::avx2)) {
      EXPECT_TRUE(on_simd_kernel(*fast, "QConv"));
    }
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      auto in = synthetic_inputs(g, seed);
      EXPECT_LE(max_steps(ref->run(in)[0], fast->run(in)[0], 0.04), 1.0 + 1e-4);
    }
  }
}

TEST(Qdq, WeightsThatDoNotFitI8StayAsImportedWithAReason) {
  // u8 weights with zero point 0 reach 255 - 0 > 127: no exact symmetric i8 form.
  Graph g = qlinear_conv_net(DType::u8, DType::u8, 0, false);
  QdqStats st;
  Graph h = g;
  fuse_qdq(h, &st);
  ASSERT_EQ(st.unfused.size(), 1u);
  EXPECT_THAT(st.unfused[0].reason, HasSubstr("outside i8"));
  auto fast = compile(g, true);
  ASSERT_EQ(count_ops(fast->graph(), "QLinearConv"), 1);
  for (auto& n : fast->graph().nodes)
    if (n.op == "QLinearConv") {
      EXPECT_THAT(n.attrs.get_string(kQdqUnfusedAttr, ""), HasSubstr("outside i8"));
    }
  auto ref = compile(g, false);
  auto in = synthetic_inputs(g, 1);
  EXPECT_EQ(max_steps(ref->run(in)[0], fast->run(in)[0], 0.04), 0.0);
}

TEST(Qdq, QLinearMatMulWithConstantBBecomesQGemm) {
  B b;
  ValueId x = b.g.add_value("input", DType::f32, {3, 20}, true);
  b.g.inputs.push_back(x);
  Tensor w(DType::i8, {20, 7}), ws(DType::f32, {7}), wz(DType::i8, {7});
  std::uniform_int_distribution<int> d(-127, 127);
  for (int64_t i = 0; i < w.numel(); ++i) w.data<int8_t>()[i] = static_cast<int8_t>(d(b.rng));
  for (int64_t n = 0; n < 7; ++n) ws.data<float>()[n] = 0.003f * static_cast<float>(1 + n % 3);
  ValueId y = b.g.add_value("y");
  b.g.add_node("QLinearMatMul", "mm",
               {b.q(x, 0.02f, 128), b.f32_scalar(0.02f), b.zp(DType::u8, 128), b.g.add_constant("w", w),
                b.g.add_constant("ws", ws), b.g.add_constant("wz", wz), b.f32_scalar(0.05f), b.zp(DType::u8, 130)},
               {y});
  b.g.outputs.push_back(b.dq(y, 0.05f, 130));
  auto ref = compile(b.g, false);
  auto fast = compile(b.g, true);
  EXPECT_EQ(count_ops(fast->graph(), "QGemm"), 1);
  EXPECT_EQ(count_ops(fast->graph(), "QLinearMatMul"), 0);
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    auto in = synthetic_inputs(b.g, seed);
    EXPECT_LE(max_steps(ref->run(in)[0], fast->run(in)[0], 0.05), 1.0 + 1e-4);
  }
}

// A small fp32 CNN (conv+relu, conv+residual+relu, maxpool, global pool, gemm) quantized by lowbit.
Graph fp32_net() {
  B b;
  ValueId x = b.g.add_value("input", DType::f32, {1, 3, 16, 16}, true);
  b.g.inputs.push_back(x);
  ValueId c1 = b.op("Relu", {b.op("Conv", {x, b.f32_const({8, 3, 3, 3}, 0.4f), b.f32_const({8}, 0.1f)}, conv_attrs(3, 1))});
  ValueId c2 = b.op("Conv", {c1, b.f32_const({8, 8, 3, 3}, 0.2f), b.f32_const({8}, 0.1f)}, conv_attrs(3, 1));
  ValueId r = b.op("Relu", {b.op("Add", {c2, c1})});
  Attributes mp;
  mp.set("kernel_shape", std::vector<int64_t>{2, 2});
  mp.set("strides", std::vector<int64_t>{2, 2});
  ValueId p = b.op("MaxPool", {r}, mp);
  ValueId c3 = b.op("Relu", {b.op("Conv", {p, b.f32_const({16, 8, 1, 1}, 0.3f), b.f32_const({16}, 0.1f)}, conv_attrs(1, 0))});
  ValueId fl = b.op("Flatten", {b.op("GlobalAveragePool", {c3})});
  Attributes ga;
  ga.set("transB", int64_t{1});
  b.g.outputs.push_back(b.op("Gemm", {fl, b.f32_const({10, 16}, 0.3f), b.f32_const({10}, 0.1f)}, ga));
  return std::move(b.g);
}

TEST(Qdq, ExportedQdqReimportsToTheSameQuantizedModel) {
  auto fp32 = compile(fp32_net(), true);
  CompileOptions o;
  o.threads = 2;
  QuantizeOptions q;
  q.synthetic_samples = 4;
  // allow: on an AVX-512 host without VNNI the guard would keep the convs in fp32; this test is
  // about the QDQ round trip of every conv.
  QuantizedBuild qb = build_quantized(*fp32, o, q, SlowPolicy::allow);
  ASSERT_GE(count_ops(qb.model->graph(), "QConv"), 3);
  const std::string bytes = export_onnx_qdq_bytes(qb.graph);
  Graph back = import_onnx_bytes(bytes, {}, "qdq-roundtrip");
  auto reimported = compile(back, true);
  const Graph& rg = reimported->graph();
  EXPECT_EQ(count_ops(rg, "Conv"), 0);
  EXPECT_EQ(count_ops(rg, "QConv"), 3);
  EXPECT_EQ(count_ops(rg, "QGemm"), 1);
  EXPECT_EQ(count_ops(rg, "QAdd"), 1);  // the residual, which QDQ cannot fuse into the conv
  auto unfused = compile(back, false);
  for (uint64_t seed = 50; seed < 53; ++seed) {
    auto in = synthetic_inputs(fp32->graph(), seed);
    Tensor a = qb.model->run(in)[0], r = reimported->run(in)[0], u = unfused->run(in)[0];
    // The residual's extra quantization step and the i32 bias cost a little; the rest is exact.
    EXPECT_GT(cosine(a, r), 0.999) << "seed " << seed;
    EXPECT_GT(cosine(u, r), 0.9999) << "seed " << seed;
  }
}

TEST(Qdq, ExportWithoutResidualRoundTripsWithinOneStep) {
  // Graph of the QDQ test net (no Conv residual fused): lowbit form -> QDQ -> lowbit form.
  auto m = compile(qdq_net(DType::u8), true);
  // The compiled graph is already lowbit's form; export it as a quantized graph.
  const std::string bytes = export_onnx_qdq_bytes(m->graph());
  auto back = compile(import_onnx_bytes(bytes, {}, "qdq-roundtrip"), true);
  EXPECT_EQ(count_ops(back->graph(), "QConv"), 2);
  EXPECT_EQ(count_ops(back->graph(), "QAdd"), 1);
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    auto in = synthetic_inputs(m->graph(), seed);
    EXPECT_LE(max_steps(m->run(in)[0], back->run(in)[0], 0.05), 1.0 + 1e-4);
  }
}

TEST(Qdq, ExportSpellsOutFp32NodesWithFusedEpilogues) {
  // The residual conv stays fp32 (fused Add + Relu): the export writes Conv, Add, Relu.
  auto fp32 = compile(fp32_net(), true);
  CompileOptions o;
  o.threads = 2;
  QuantizeOptions q;
  q.synthetic_samples = 2;
  q.keep_fp32 = {"Conv_1"};
  QuantizedBuild qb = build_quantized(*fp32, o, q, SlowPolicy::allow);  // as above: host-independent
  ASSERT_EQ(count_ops(qb.model->graph(), "Conv"), 1);
  auto back = compile(import_onnx_bytes(export_onnx_qdq_bytes(qb.graph), {}, "qdq-fp32-conv"), true);
  EXPECT_EQ(count_ops(back->graph(), "Conv"), 1);
  EXPECT_EQ(count_ops(back->graph(), "QConv"), 2);
  for (uint64_t seed = 60; seed < 62; ++seed) {
    auto in = synthetic_inputs(fp32->graph(), seed);
    EXPECT_GT(cosine(qb.model->run(in)[0], back->run(in)[0]), 0.9999) << "seed " << seed;
  }
}

// The export writes opset 13: a HardSwish (opset 14) is spelled x * HardSigmoid(x), an unfolded
// BatchNormalization (DenseNet's, after a Concat) loses training_mode = 0 and a Reshape (ShuffleNet's
// channel shuffle) allowzero = 0, both opset 14. ONNX Runtime refused all three files before.
TEST(Qdq, ExportStaysInsideOpset13) {
  Graph g;
  ValueId x = g.add_value("x", DType::f32, {1, 4, 6, 6}, true);
  g.inputs.push_back(x);
  auto vec = [&](float v) {
    Tensor t(DType::f32, {4});
    for (int i = 0; i < 4; ++i) t.data<float>()[i] = v + 0.1f * i;
    return g.add_constant(g.unique_name("bn"), t);
  };
  ValueId bn = g.add_value("bn_out");
  Attributes ba;
  ba.set("training_mode", int64_t{0});
  g.add_node("BatchNormalization", "bn", {x, vec(1.0f), vec(0.0f), vec(0.1f), vec(1.0f)}, {bn}, ba);
  Tensor w(DType::f32, {4, 4, 1, 1});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.1f * float(i % 7) - 0.3f;
  ValueId c = g.add_value("conv_out"), h = g.add_value("hs_out"), y = g.add_value("y");
  g.add_node("Conv", "conv", {bn, g.add_constant("w", w)}, {c});
  g.add_node("HardSwish", "hs", {c}, {h});
  Tensor shape(DType::i64, {4});
  for (int i = 0; i < 4; ++i) shape.data<int64_t>()[i] = std::vector<int64_t>{1, 4, 36, 1}[size_t(i)];
  ValueId r = g.add_value("r"), r2 = g.add_value("r2");
  Attributes ra;
  ra.set("allowzero", int64_t{0});
  g.add_node("Reshape", "reshape", {h, g.add_constant("shape", shape)}, {r}, ra);
  Tensor back_shape(DType::i64, {4});
  for (int i = 0; i < 4; ++i) back_shape.data<int64_t>()[i] = std::vector<int64_t>{1, 4, 6, 6}[size_t(i)];
  g.add_node("Reshape", "reshape_back", {r, g.add_constant("shape2", back_shape)}, {r2});
  g.add_node("Conv", "conv2", {r2, g.add_constant("w2", w)}, {y});
  g.outputs = {y};
  validate(g);
  CompileOptions o, fo;
  fo.fuse_post_ops = false;  // to be calibrated
  auto fp32 = CompiledModel::compile(g, fo);
  QuantizeOptions q;
  q.synthetic_samples = 2;
  QuantizedBuild qb = build_quantized(*fp32, o, q, SlowPolicy::allow);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(export_onnx_qdq_bytes(qb.graph)));
  ASSERT_EQ(m.opset_import(0).version(), 13);
  int gates = 0;
  for (const onnx::NodeProto& n : m.graph().node()) {
    EXPECT_NE(n.op_type(), "HardSwish");
    gates += n.op_type() == "HardSigmoid";
    for (const onnx::AttributeProto& a : n.attribute()) {
      EXPECT_NE(a.name(), "training_mode") << n.name();
      EXPECT_NE(a.name(), "allowzero") << n.name();
    }
  }
  EXPECT_EQ(gates, 1);
  auto back = compile(import_onnx_bytes(export_onnx_qdq_bytes(qb.graph), {}, "opset13"), true);
  auto in = synthetic_inputs(fp32->graph(), 3);
  EXPECT_GT(cosine(qb.model->run(in)[0], back->run(in)[0]), 0.999);
}

// Sub-byte QDQ, out and back in, in both of the export's forms: the default one ONNX Runtime 1.30
// runs (INT4 weights, u8 QuantizeLinear + Clip to 15 / 3 for the activations: QCDQ) and the exact
// one (opset 25: INT2 weights, UINT4 / UINT2 activations). lowbit reads either into the same
// QConv nodes with packed i4 / i2 weights and u4 / u2 codes, and the two give the same bytes; the
// ONNX semantics of the exact file (run unfused) agree with its fused form.
TEST(Qdq, SubbyteExportsReimportInBothFormsToTheSameCodes) {
  auto fp32 = compile(fp32_net(), true);
  CompileOptions o;
  o.threads = 2;
  for (const char* prec : {"w4a4", "w2a2"}) {
    SCOPED_TRACE(prec);
    QuantizeOptions q;
    q.synthetic_samples = 4;
    q.precision = parse_precision(prec);
    q.keep_8bit = parse_keep_8bit("none");  // every conv at the sub-byte width
    QuantizedBuild qb = build_quantized(*fp32, o, q, SlowPolicy::allow);
    const DType wcode = q.precision.weight, acode = q.precision.act;
    QdqExportOptions exact;
    exact.exact_subbyte_types = true;
    const std::string def_bytes = export_onnx_qdq_bytes(qb.graph), exact_bytes = export_onnx_qdq_bytes(qb.graph, exact);
    onnx::ModelProto m;
    ASSERT_TRUE(m.ParseFromString(exact_bytes));
    EXPECT_EQ(m.opset_import(0).version(), 25);
    int typed_w = 0, typed_zp = 0;
    for (const onnx::TensorProto& t : m.graph().initializer()) {
      typed_w += t.data_type() == (wcode == DType::i2 ? kOnnxInt2 : kOnnxInt4) && t.dims_size() == 4;
      typed_zp += t.data_type() == (acode == DType::u2 ? kOnnxUint2 : kOnnxUint4);
    }
    EXPECT_GE(typed_w, 3);
    EXPECT_GE(typed_zp, 1);
    auto via_default = compile(import_onnx_bytes(def_bytes, {}, "qcdq"), true);
    auto via_exact = compile(import_onnx_bytes(exact_bytes, {}, "exact"), true);
    auto unfused = compile(import_onnx_bytes(exact_bytes, {}, "exact-unfused"), false);
    for (const auto* back : {via_default.get(), via_exact.get()}) {
      int sub = 0, narrow_out = 0;
      for (const Node& n : back->graph().nodes)
        if (n.op == "QConv") {
          sub += code_dtype(back->graph().value(n.inputs[1])) == wcode &&
                 back->graph().value(n.inputs[1]).dtype == wcode;  // packed
          // (the residual conv's output is 8-bit in QDQ: its Add requantizes)
          narrow_out += code_dtype(back->graph().value(n.outputs[0])) == acode;
        }
      EXPECT_EQ(sub, 3);
      EXPECT_GE(narrow_out, 2);
    }
    for (uint64_t seed = 70; seed < 72; ++seed) {
      auto in = synthetic_inputs(fp32->graph(), seed);
      const Tensor d = via_default->run(in)[0], e = via_exact->run(in)[0];
      ASSERT_EQ(std::memcmp(d.raw(), e.raw(), static_cast<size_t>(d.nbytes())), 0);
      EXPECT_GT(cosine(unfused->run(in)[0], e), 0.999);
      EXPECT_GT(cosine(qb.model->run(in)[0], e), 0.95);  // QDQ requantizes the residual path once more
    }
  }
}

// ONNX INT2 / UINT2 (opset 25): four values per byte, element 0 in the lowest bits.
TEST(Qdq, Int2TensorsArePackedLowBitsFirst) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(kOnnxInt2);
  t.add_dims(5);
  const char raw[2] = {static_cast<char>(0b01'10'11'00), static_cast<char>(0b00'00'00'01)};  // 0 -1 -2 1 | 1
  t.set_raw_data(raw, 2);
  Tensor r = tensor_from_onnx(t);
  ASSERT_EQ(r.dtype(), DType::i2);
  const int want[5] = {0, -1, -2, 1, 1};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(load_code(r.raw(), DType::i2, i), want[i]) << i;
  t.set_data_type(kOnnxUint2);
  r = tensor_from_onnx(t);
  ASSERT_EQ(r.dtype(), DType::u2);
  const int want_u[5] = {0, 3, 2, 1, 1};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(load_code(r.raw(), DType::u2, i), want_u[i]) << i;
}

// Group-wise weights out and back in: blocked DequantizeLinear (opset 21, block_size along the
// input channels) re-imports to QConv nodes with the same blocks and scales.
TEST(Qdq, GroupWiseWeightsExportAsBlockedDequantizeAndReimport) {
  auto fp32 = compile(fp32_net(), true);
  CompileOptions o;
  o.threads = 2;
  QuantizeOptions q;
  q.synthetic_samples = 4;
  q.precision = parse_precision("w4a8");
  q.keep_8bit = parse_keep_8bit("none");
  q.group_size = 4;
  QuantizedBuild qb = build_quantized(*fp32, o, q, SlowPolicy::allow);
  onnx::ModelProto m;
  const std::string bytes = export_onnx_qdq_bytes(qb.graph);
  ASSERT_TRUE(m.ParseFromString(bytes));
  EXPECT_GE(m.opset_import(0).version(), 21);
  int blocked = 0;
  for (const onnx::NodeProto& n : m.graph().node())
    for (const onnx::AttributeProto& a : n.attribute()) blocked += a.name() == "block_size" && a.i() == 4;
  EXPECT_GE(blocked, 3);
  auto back = compile(import_onnx_bytes(bytes, {}, "blocked"), true);
  int grouped = 0;
  for (const Node& n : back->graph().nodes)
    if (n.op == "QConv" || n.op == "QGemm") grouped += back->graph().value(n.inputs[1]).quant->block_size == 4;
  EXPECT_GE(grouped, 3);
  auto unfused = compile(import_onnx_bytes(bytes, {}, "blocked-unfused"), false);
  for (uint64_t seed = 80; seed < 82; ++seed) {
    auto in = synthetic_inputs(fp32->graph(), seed);
    const Tensor r = back->run(in)[0];
    EXPECT_GT(cosine(qb.model->run(in)[0], r), 0.999);
    EXPECT_GT(cosine(unfused->run(in)[0], r), 0.999);
  }
}
