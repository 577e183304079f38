// QLut: element-wise maps (HardSwish, Sigmoid, SiLU, Clip, LeakyRelu...) on u8 codes as 256-entry
// tables, so that MobileNetV3 / EfficientNet activations stay int8 between their convs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "lowbit/common/error.h"
#include "lowbit/dispatch/registry.h"
#include "lowbit/ir/channel_table.h"
#ifdef LOWBIT_HAS_ONNX
#include <onnx/onnx_pb.h>

#include "lowbit/frontend/onnx/onnx_export_qdq.h"
#include "lowbit/frontend/onnx/onnx_import.h"
#endif
#include "lowbit/io/synthetic.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/quant/guard.h"
#include "lowbit/runtime/thread_pool.h"
#include "small_graphs.h"
#include "tensor_compare.h"

namespace lowbit {
namespace {

int count_ops(const Graph& g, const std::string& op) {
  int c = 0;
  for (const Node& n : g.nodes) c += n.op == op;
  return c;
}

ValueId scalar(Graph& g, float v) {
  Tensor t(DType::f32, {});
  t.data<float>()[0] = v;
  return g.add_constant(g.unique_name("c"), t);
}

// x -> Conv -> HardSwish -> * 0.5 - 0.2 -> Conv -> Sigmoid -> Clip(0.2, 0.7) -> Conv -> LeakyRelu -> Conv
// -> SiLU -> Conv. The scale and shift after HardSwish (PP-LCNet's learnable affine) go into its table.
Graph maps_net() {
  Graph g;
  std::mt19937 rng(3);
  ValueId x = g.add_value("x", DType::f32, {1, 6, 9, 7}, true);
  g.inputs.push_back(x);
  auto conv = [&](ValueId in) { return test::add_conv1x1(g, rng, 0.5f, in, 6, 6); };
  auto op = [&](const char* type, std::vector<ValueId> in, Attributes a = {}) {
    ValueId y = g.add_value(g.unique_name(std::string(type) + "_out"));
    g.add_node(type, type, std::move(in), {y}, std::move(a));
    return y;
  };
  ValueId v = op("HardSwish", {conv(x)});
  v = op("Sub", {op("Mul", {scalar(g, 0.5f), v}), scalar(g, 0.2f)});
  v = op("Sigmoid", {conv(v)});
  v = op("Clip", {v, scalar(g, 0.2f), scalar(g, 0.7f)});
  Attributes leaky;
  leaky.set("alpha", 0.1f);
  v = op("LeakyRelu", {conv(v)}, leaky);
  ValueId c = conv(v);
  ValueId s = op("Sigmoid", {c});
  v = op("Mul", {c, s});  // SiLU once fused
  g.outputs = {conv(v)};
  validate(g);
  return g;
}

QuantizedBuild quantized_maps_net(std::unique_ptr<CompiledModel>& fp32) { return test::quantize_small(maps_net(), fp32); }

const Node* find_lut(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op == "QLut" && n.attrs.get_string("op", "") == op) return &n;
  return nullptr;
}

TEST(QLut, QuantizerRunsElementwiseMapsOnCodes) {
  std::unique_ptr<CompiledModel> fp32;
  QuantizedBuild b = quantized_maps_net(fp32);
  const Graph& g = b.model->graph();
  EXPECT_EQ(count_ops(g, "QLut"), 5);  // HardSwish (with its scale and shift), Sigmoid, Clip, LeakyRelu, SiLU
  EXPECT_EQ(count_ops(g, "QConv"), 5);
  EXPECT_EQ(count_ops(g, "Mul") + count_ops(g, "Sub"), 0);  // taken into the HardSwish table
  const Node* hs = find_lut(g, "HardSwish");
  ASSERT_NE(hs, nullptr);
  EXPECT_EQ(hs->attrs.get_float("post_scale", 1.0f), 0.5f);
  EXPECT_EQ(hs->attrs.get_float("post_shift", 0.0f), -0.2f);
  // One QuantizeLinear at the input and one DequantizeLinear at the output: no domain change between.
  EXPECT_EQ(count_ops(g, "QuantizeLinear"), 1);
  EXPECT_EQ(count_ops(g, "DequantizeLinear"), 1);
  for (const char* op : {"HardSwish", "Sigmoid", "Clip", "LeakyRelu", "SiLU"}) EXPECT_NE(find_lut(g, op), nullptr) << op;
  // Against the int8 model with every map in fp32 between DQ and Q: close, and both near fp32.
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    auto in = synthetic_inputs(fp32->graph(), seed);
    const Tensor a = fp32->run(in)[0], q = b.model->run(in)[0];
    EXPECT_GT(testutil::cosine(a, q), 0.99) << "seed " << seed;
  }
}

// The tables against the ops' formulas in double (oracle: the ONNX definitions, not lowbit's
// reference kernels): every code within one step, and nearly all exact (an fp32 reference can
// round a value that sits on a half step the other way).
TEST(QLut, TablesAreTheOpOfEveryDequantizedCode) {
  std::unique_ptr<CompiledModel> fp32;
  QuantizedBuild b = quantized_maps_net(fp32);
  const Graph& g = b.model->graph();
  auto formula = [](const std::string& op, double x) {
    if (op == "HardSwish") return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0) * 0.5 - 0.2;
    if (op == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
    if (op == "Clip") return std::clamp(x, 0.2, 0.7);
    if (op == "LeakyRelu") return x < 0 ? 0.1 * x : x;
    return x / (1.0 + std::exp(-x));  // SiLU
  };
  for (const char* op : {"HardSwish", "Sigmoid", "Clip", "LeakyRelu", "SiLU"}) {
    const Node* n = find_lut(g, op);
    ASSERT_NE(n, nullptr) << op;
    const QuantParams& qx = *g.value(n->inputs[0]).quant;
    const QuantParams& qy = *g.value(n->outputs[0]).quant;
    const uint8_t* t = g.constant(n->inputs[1])->data<uint8_t>();
    int exact = 0;
    for (int c = 0; c < 256; ++c) {
      const double y = formula(op, (c - qx.zero_point[0]) * double(qx.scale[0]));
      const double want = std::clamp(std::nearbyint(y / qy.scale[0]) + qy.zero_point[0], 0.0, 255.0);
      EXPECT_LE(std::abs(t[c] - want), 1.0) << op << " code " << c;
      exact += t[c] == want;
    }
    EXPECT_GE(exact, 250) << op;
  }
}

// DenseNet's pre-activation: Concat -> BatchNormalization -> Relu -> Conv, the BN after a Concat
// where no Conv can fold it, and before it a zero Pad (as PyTorch exports the transitions' pools)
// feeding an AveragePool (without them: `pool` false). x [1, 5, 6, 7].
Graph bn_net(bool pool = true) {
  Graph g;
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 0.5f);
  std::uniform_real_distribution<float> pos(0.3f, 2.0f);
  ValueId x = g.add_value("x", DType::f32, {1, 5, 6, 7}, true);
  g.inputs.push_back(x);
  auto conv = [&](ValueId in, int64_t cin, int64_t cout) { return test::add_conv1x1(g, rng, 0.5f, in, cin, cout); };
  auto vec = [&](int64_t n, bool positive) {
    Tensor t(DType::f32, {n});
    for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = positive ? pos(rng) : d(rng);
    return g.add_constant(g.unique_name("bn"), t);
  };
  ValueId cat = g.add_value("cat");
  Attributes axis;
  axis.set("axis", int64_t{1});
  g.add_node("Concat", "concat", {conv(x, 5, 4), conv(x, 5, 3)}, {cat}, axis);
  ValueId bn = g.add_value("bn_out"), relu = g.add_value("relu_out");
  Attributes inference;
  inference.set("training_mode", int64_t{0});  // as PyTorch's opset-17 export writes it
  g.add_node("BatchNormalization", "bn", {cat, vec(7, true), vec(7, false), vec(7, false), vec(7, true)}, {bn}, inference);
  g.add_node("Relu", "relu", {bn}, {relu});
  if (!pool) {
    g.outputs = {conv(conv(relu, 7, 6), 6, 4)};
    validate(g);
    return g;
  }
  Tensor zeros(DType::i64, {8});
  ValueId padded = g.add_value("padded"), pooled = g.add_value("pooled");
  g.add_node("Pad", "pad", {conv(relu, 7, 6), g.add_constant("pads", zeros)}, {padded});
  Attributes pa;
  pa.set("kernel_shape", std::vector<int64_t>{2, 2});
  pa.set("strides", std::vector<int64_t>{2, 2});
  g.add_node("AveragePool", "pool", {padded}, {pooled}, pa);
  g.outputs = {conv(pooled, 6, 4)};
  validate(g);
  return g;
}

QuantizedBuild quantized_bn_net(std::unique_ptr<CompiledModel>& fp32, bool pool = true) {
  return test::quantize_small(bn_net(pool), fp32);
}

// The BN (with the Relu fused as its clamp) becomes one table per channel on codes: no
// DequantizeLinear / QuantizeLinear inside the network, the zero Pad gone, the pool on codes.
// Oracle: the BN formula in double on every dequantized code of every channel.
TEST(QLut, BatchNormAfterConcatIsATablePerChannel) {
  std::unique_ptr<CompiledModel> fp32;
  QuantizedBuild b = quantized_bn_net(fp32);
  const Graph& g = b.model->graph();
  EXPECT_EQ(count_ops(g, "Pad"), 0);
  EXPECT_EQ(count_ops(g, "BatchNormalization"), 0);
  EXPECT_EQ(count_ops(g, "QuantizeLinear"), 1);    // the input
  EXPECT_EQ(count_ops(g, "DequantizeLinear"), 1);  // the output
  const Node* n = find_lut(g, "BatchNormalization");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attrs.get_float("act_min", -1.0f), 0.0f);  // the Relu
  EXPECT_EQ(n->inputs[1], kNoValue);  // derived when the kernel is made, not stored
  const std::vector<uint8_t> table = channel_table(g, *n);
  ASSERT_EQ(table.size(), size_t{7 * 256});
  const QuantParams& qx = *g.value(n->inputs[0]).quant;
  const QuantParams& qy = *g.value(n->outputs[0]).quant;
  const Graph& f = fp32->graph();
  const Node* bn = nullptr;
  for (const Node& m : f.nodes)
    if (m.op == "BatchNormalization") bn = &m;
  ASSERT_NE(bn, nullptr);
  auto param = [&](size_t i, int64_t c) { return double(f.constant(bn->inputs[i])->data<float>()[c]); };
  int exact = 0;
  for (int64_t c = 0; c < 7; ++c) {
    for (int code = 0; code < 256; ++code) {
      const double v = (code - qx.zero_point[0]) * double(qx.scale[0]);
      const double y = std::max(0.0, (v - param(3, c)) / std::sqrt(param(4, c) + 1e-5) * param(1, c) + param(2, c));
      const double want = std::clamp(std::nearbyint(y / qy.scale[0]) + qy.zero_point[0], 0.0, 255.0);
      const int got = table[size_t(c * 256 + code)];
      EXPECT_LE(std::abs(got - want), 1.0) << "channel " << c << " code " << code;
      exact += got == want;
    }
  }
  EXPECT_GE(exact, 7 * 250);
  // The network against fp32, and against the same int8 network with the BN unquantized
  // (DequantizeLinear -> BN -> QuantizeLinear), whose codes it must give up to half-step ties.
  QuantizeOptions q = test::small_quantize_options();
  q.keep_fp32 = {"bn"};
  std::unique_ptr<CompiledModel> fp32_again;
  QuantizedBuild unfused = test::quantize_small(bn_net(), fp32_again, q);
  EXPECT_EQ(count_ops(unfused.model->graph(), "BatchNormalization"), 1);
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    auto in = synthetic_inputs(fp32->graph(), seed);
    const Tensor a = fp32->run(in)[0], qt = b.model->run(in)[0], u = unfused.model->run(in)[0];
    EXPECT_GT(testutil::cosine(a, qt), 0.99) << "seed " << seed;
    EXPECT_GT(testutil::cosine(u, qt), 0.9999) << "seed " << seed;
  }
}

// Every QLut row against the reference, at sizes around the kernel's task size, 1 and 3 threads.
TEST(QLut, EveryRowMatchesTheReference) {
  std::mt19937 rng(11);
  int rows = 0;
  for (const KernelCandidate* kc : candidates_for("QLut")) {
    if (kc->name.starts_with("reference") || !kc->create) continue;
    {  // a row for a CPU feature this host lacks (VBMI on Zen 3) is tested where it runs
      Graph probe;
      ValueId x = probe.add_value("x", DType::u8, {1, 4}, true);
      probe.value(x).quant = QuantParams{{0.05f}, {7}, -1};
      ValueId y = probe.add_value("y", DType::u8, {1, 4}, true);
      probe.value(y).quant = QuantParams{{0.02f}, {3}, -1};
      Attributes a;
      a.set("op", std::string("Sigmoid"));
      probe.add_node("QLut", "lut", {x, probe.add_constant("t", Tensor(DType::u8, {256}))}, {y}, a);
      if (!candidate_cannot_run(*kc, NodeContext{probe, probe.nodes[0], host_target(), 1}).empty()) continue;
    }
    ++rows;
    for (int64_t n : {1, 15, 31, 32, 33, 63, 64, 65, 127, 4097, 65536 + 33, 200001}) {
      Graph g;
      ValueId x = g.add_value("x", DType::u8, {1, n}, true);
      g.value(x).quant = QuantParams{{0.05f}, {7}, -1};
      Tensor table(DType::u8, {256});
      for (int c = 0; c < 256; ++c) table.data<uint8_t>()[c] = static_cast<uint8_t>(rng());
      ValueId t = g.add_constant("t", table);
      ValueId y = g.add_value("y", DType::u8, {1, n}, true);
      g.value(y).quant = QuantParams{{0.02f}, {3}, -1};
      Attributes a;
      a.set("op", std::string("Sigmoid"));
      g.add_node("QLut", "lut", {x, t}, {y}, a);
      validate(g);
      Tensor xin(DType::u8, {1, n}), want(DType::u8, {1, n});
      for (int64_t i = 0; i < n; ++i) xin.data<uint8_t>()[i] = static_cast<uint8_t>(rng());
      std::vector<TensorView> in = {xin.view(), table.view()}, ref_out = {want.view()};
      find_reference("QLut")(g, g.nodes[0], in, ref_out);
      NodeContext ctx{g, g.nodes[0], host_target(), 3};
      ASSERT_EQ(kc->check(ctx), "") << kc->name;
      auto k = kc->create(ctx);
      for (int threads : {1, 3}) {
        ThreadPool pool(threads);
        Tensor got(DType::u8, {1, n});
        std::vector<TensorView> out = {got.view()};
        k->run(in, out, pool);
        EXPECT_EQ(std::memcmp(got.data<uint8_t>(), want.data<uint8_t>(), size_t(n)), 0)
            << kc->name << " n " << n << " threads " << threads;
      }
    }
  }
  EXPECT_GE(rows, 1);
}

// A per-channel QLut node: BatchNormalization constants drawn from rng (every channel's table
// differs), its Relu as act_min, X [shape] and Y quantized per tensor.
Graph bn_lut_graph(const Shape& shape, std::mt19937& rng) {
  const int64_t C = shape[1];
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::uniform_real_distribution<float> pos(0.3f, 2.0f);
  Graph g;
  ValueId x = g.add_value("x", DType::u8, shape, true);
  g.value(x).quant = QuantParams{{0.05f}, {7}, -1};
  std::vector<ValueId> ins{x, kNoValue};
  for (int k = 0; k < 4; ++k) {
    Tensor t(DType::f32, {C});
    for (int64_t c = 0; c < C; ++c) t.data<float>()[c] = k == 0 || k == 3 ? pos(rng) : d(rng);
    ins.push_back(g.add_constant("bn" + std::to_string(k), t));
  }
  ValueId y = g.add_value("y", DType::u8, shape, true);
  g.value(y).quant = QuantParams{{0.02f}, {3}, -1};
  Attributes a;
  a.set("op", std::string("BatchNormalization"));
  a.set("act_min", 0.0f);
  g.add_node("QLut", "lut", ins, {y}, a);
  validate(g);
  return g;
}

// Every QLut row with a table per channel against y[n, c, i] = T_c[x[n, c, i]] written out here
// (T from channel_table, which the test above checks against the formula): planes of 1 to 90000
// bytes (one plane per task, and many), channel counts that do not divide a task's planes,
// batch 2; 1 and 3 threads.
TEST(QLut, EveryRowMatchesTheOraclePerChannel) {
  std::mt19937 rng(12);
  int rows = 0;
  for (const KernelCandidate* kc : candidates_for("QLut")) {
    if (!kc->create) continue;
    struct Case {
      Shape x;
    };
    const Case cases[] = {{{1, 1, 1, 1}}, {{2, 3, 1, 1}}, {{1, 7, 7, 7}}, {{2, 5, 3, 11}}, {{1, 64, 9, 13}},
                          {{1, 3, 300, 300}}, {{2, 130, 13}}, {{1, 2, 65, 1}}};
    bool ran = false;
    for (const Case& cs : cases) {
      const int64_t C = cs.x[1];
      const Graph g = bn_lut_graph(cs.x, rng);
      const std::vector<uint8_t> table = channel_table(g, g.nodes[0]);
      NodeContext ctx{g, g.nodes[0], host_target(), 3};
      if (!candidate_cannot_run(*kc, ctx).empty()) break;  // a CPU feature this host lacks
      ran = true;
      ASSERT_EQ(kc->check(ctx), "") << kc->name;
      const int64_t n = num_elements(cs.x);
      int64_t plane = 1;
      for (size_t d = 2; d < cs.x.size(); ++d) plane *= cs.x[d];
      Tensor xin(DType::u8, cs.x), want(DType::u8, cs.x);
      for (int64_t i = 0; i < n; ++i) xin.data<uint8_t>()[i] = static_cast<uint8_t>(rng());
      for (int64_t i = 0; i < n; ++i)
        want.data<uint8_t>()[i] = table[size_t((i / plane) % C * 256 + xin.data<uint8_t>()[i])];
      std::vector<TensorView> in = {xin.view(), TensorView{}};
      for (size_t k = 2; k < 6; ++k) in.push_back(g.constant(g.nodes[0].inputs[k])->view());
      auto k = kc->create(ctx);
      for (int threads : {1, 3}) {
        ThreadPool pool(threads);
        Tensor got(DType::u8, cs.x);
        std::vector<TensorView> out = {got.view()};
        k->run(in, out, pool);
        EXPECT_EQ(std::memcmp(got.data<uint8_t>(), want.data<uint8_t>(), size_t(n)), 0)
            << kc->name << " " << shape_str(cs.x) << " threads " << threads;
      }
    }
    rows += ran;
  }
  EXPECT_GE(rows, 2);  // the scalar row and the reference at least
}

// The validation layer refuses a per-channel QLut whose constants do not fit its channels, or that
// brings a table of its own, naming the node and the input.
TEST(QLut, PerChannelMapWithWrongConstantsIsRefused) {
  std::mt19937 rng(13);
  auto refused = [](Graph g, const std::string& want) {
    try {
      validate(g);
      ADD_FAILURE() << "validated; wanted an error with '" << want << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("lut"), std::string::npos) << e.what();
    }
  };
  Graph short_var = bn_lut_graph({1, 4, 3, 3}, rng);
  short_var.nodes[0].inputs[5] = short_var.add_constant("var3", Tensor(DType::f32, {3}));
  refused(std::move(short_var), "one per channel");
  Graph with_table = bn_lut_graph({1, 4, 3, 3}, rng);
  with_table.nodes[0].inputs[1] = with_table.add_constant("t", Tensor(DType::u8, {4, 256}));
  refused(std::move(with_table), "no table");
}

#ifdef LOWBIT_HAS_ONNX
// QDQ export writes each table as its op between DequantizeLinear and QuantizeLinear. Imported
// back, that op runs on lowbit's fp32 SIMD kernels, whose Sigmoid is within 2 ulp of the
// reference the table was made with: a value on a half step can round to the neighbouring code,
// so a few outputs move by a little, and nothing more (a wrong op or attribute would move all).
TEST(QLut, QdqExportReimportsToTheSameCodes) {
  std::unique_ptr<CompiledModel> fp32;
  QuantizedBuild b = quantized_maps_net(fp32);
  CompileOptions o;
  o.threads = 2;
  auto back = CompiledModel::compile(import_onnx_bytes(export_onnx_qdq_bytes(b.graph), {}, "qlut-roundtrip"), o);
  EXPECT_EQ(count_ops(back->graph(), "QConv"), 5);
  for (uint64_t seed = 4; seed <= 6; ++seed) {
    auto in = synthetic_inputs(fp32->graph(), seed);
    const Tensor a = b.model->run(in)[0], r = back->run(in)[0];
    EXPECT_LE(testutil::count_different(a, r), a.numel() / 20) << "seed " << seed;
    EXPECT_GT(testutil::cosine(a, r), 0.9999) << "seed " << seed;
  }
}

// The per-channel table exports as DequantizeLinear -> BatchNormalization -> Relu ->
// QuantizeLinear; imported back, that runs in fp32 (as the element-wise maps' do) and gives the
// table's codes up to half-step ties. Without the pool, whose u8 average rounds otherwise than
// the exported DequantizeLinear -> AveragePool -> QuantizeLinear (14 of 36 outputs moved by that alone).
TEST(QLut, BatchNormTableExportReimportsToTheSameCodes) {
  std::unique_ptr<CompiledModel> fp32;
  QuantizedBuild b = quantized_bn_net(fp32, false);
  CompileOptions o;
  o.threads = 2;
  const std::string bytes = export_onnx_qdq_bytes(b.graph);
  // Opset 13's BatchNormalization has no training_mode (ONNX Runtime refuses a model that sets it).
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  int bns = 0;
  for (const onnx::NodeProto& p : m.graph().node()) {
    if (p.op_type() != "BatchNormalization") continue;
    ++bns;
    for (const onnx::AttributeProto& a : p.attribute()) EXPECT_NE(a.name(), "training_mode");
  }
  EXPECT_EQ(bns, 1);
  auto back = CompiledModel::compile(import_onnx_bytes(bytes, {}, "bn-roundtrip"), o);
  EXPECT_EQ(count_ops(back->graph(), "BatchNormalization"), 1);
  EXPECT_EQ(count_ops(back->graph(), "QConv"), 4);
  for (uint64_t seed = 4; seed <= 6; ++seed) {
    auto in = synthetic_inputs(fp32->graph(), seed);
    const Tensor a = b.model->run(in)[0], r = back->run(in)[0];
    EXPECT_LE(testutil::count_different(a, r), a.numel() / 20) << "seed " << seed;
    EXPECT_GT(testutil::cosine(a, r), 0.9999) << "seed " << seed;
  }
}

#endif  // LOWBIT_HAS_ONNX

}  // namespace
}  // namespace lowbit
