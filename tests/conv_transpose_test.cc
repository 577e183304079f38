// ConvTranspose with kernel = stride lowered to a 1x1 Conv + DepthToSpace (passes/lower_conv_transpose.cc),
// against the reference ConvTranspose of the unoptimised graph; and DepthToSpace's fast row
// against its reference.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "lowbit/dispatch/registry.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/quant/guard.h"
#include "lowbit/runtime/thread_pool.h"
#include "tensor_compare.h"

namespace lowbit {
namespace {

int count_ops(const Graph& g, const std::string& op) {
  int c = 0;
  for (const Node& n : g.nodes) c += n.op == op;
  return c;
}

// x -> ConvTranspose(k, k) (+bias) -> BatchNormalization -> Relu -> ConvTranspose(2, 2) -> y,
// and a ConvTranspose the pass must leave alone (3x3, stride 2, pad 1) when `overlapping`.
Graph head(int64_t k, bool overlapping) {
  Graph g;
  std::mt19937 rng(2);
  std::normal_distribution<float> d(0.0f, 0.4f);
  auto tensor = [&](Shape s, float base = 0.0f) {
    Tensor t(DType::f32, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = base + d(rng);
    return g.add_constant(g.unique_name("c"), t);
  };
  ValueId x = g.add_value("x", DType::f32, {2, 6, 5, 7}, true);
  g.inputs.push_back(x);
  auto convt = [&](ValueId in, int64_t cin, int64_t cout, int64_t kk, int64_t s, int64_t pad, bool bias) {
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{kk, kk});
    a.set("strides", std::vector<int64_t>{s, s});
    a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    std::vector<ValueId> ins{in, tensor({cin, cout, kk, kk})};
    if (bias) ins.push_back(tensor({cout}));
    ValueId y = g.add_value(g.unique_name("ct"));
    g.add_node("ConvTranspose", g.unique_name("convt"), ins, {y}, a);
    return y;
  };
  ValueId v = convt(x, 6, 4, k, k, 0, true);
  ValueId bn = g.add_value("bn");
  Tensor var(DType::f32, {4});
  for (int i = 0; i < 4; ++i) var.data<float>()[i] = 0.5f + 0.3f * float(i);
  g.add_node("BatchNormalization", "bn", {v, tensor({4}, 1.0f), tensor({4}), tensor({4}), g.add_constant("var", var)},
             {bn});
  ValueId r = g.add_value("relu");
  g.add_node("Relu", "relu", {bn}, {r});
  v = convt(r, 4, 3, 2, 2, 0, false);
  if (overlapping) v = convt(v, 3, 2, 3, 2, 1, true);
  g.outputs = {v};
  validate(g);
  return g;
}

TEST(ConvTranspose, KernelEqualToStrideRunsAsConvAndDepthToSpace) {
  for (int64_t k : {2, 3})
    for (bool overlapping : {false, true}) {
      CompileOptions plain, opt;
      plain.optimize = false;
      auto ref = CompiledModel::compile(head(k, overlapping), plain);
      auto fast = CompiledModel::compile(head(k, overlapping), opt);
      const Graph& g = fast->graph();
      EXPECT_EQ(count_ops(g, "ConvTranspose"), overlapping ? 1 : 0) << "k " << k;
      EXPECT_EQ(count_ops(g, "DepthToSpace"), 2);
      EXPECT_EQ(count_ops(g, "BatchNormalization"), 0);  // folded into the conv through DepthToSpace
      for (uint64_t seed = 1; seed <= 2; ++seed) {
        auto in = synthetic_inputs(ref->graph(), seed);
        const Tensor a = ref->run(in)[0], b = fast->run(in)[0];
        ASSERT_EQ(a.shape(), b.shape());
        double worst = 0;
        for (int64_t i = 0; i < a.numel(); ++i)
          worst = std::max(worst, double(std::abs(a.data<float>()[i] - b.data<float>()[i])) /
                                      (1e-3 + std::abs(double(a.data<float>()[i]))));
        EXPECT_LT(worst, 1e-3) << "k " << k << " overlapping " << overlapping;  // float reassociation only
      }
    }
}

TEST(ConvTranspose, LoweredHeadQuantizesToQConvAndMovesCodes) {
  CompileOptions o;
  auto fp32 = CompiledModel::compile(head(2, false), o);
  QuantizeOptions q;
  q.synthetic_samples = 3;
  QuantizedBuild b = build_quantized(*fp32, o, q, SlowPolicy::allow);
  const Graph& g = b.model->graph();
  EXPECT_EQ(count_ops(g, "QConv"), 2);
  int u8_moves = 0;
  for (const Node& n : g.nodes) u8_moves += n.op == "DepthToSpace" && g.value(n.inputs[0]).dtype == DType::u8;
  EXPECT_EQ(u8_moves, 2);
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    auto in = synthetic_inputs(fp32->graph(), seed);
    EXPECT_GT(testutil::cosine(fp32->run(in)[0], b.model->run(in)[0]), 0.99) << "seed " << seed;
  }
}

TEST(DepthToSpace, FastRowMatchesTheReference) {
  std::mt19937 rng(8);
  int rows = 0;
  for (const KernelCandidate* kc : candidates_for("DepthToSpace")) {
    if (kc->name.starts_with("reference") || !kc->create) continue;
    ++rows;
    for (DType dt : {DType::f32, DType::u8})
      for (const char* mode : {"DCR", "CRD"})
        for (int64_t b : {2, 3}) {
          const Shape xs = {2, 3 * b * b, 4, 5};
          Graph g;
          ValueId x = g.add_value("x", dt, xs, true), y = g.add_value("y");
          Attributes a;
          a.set("blocksize", b);
          a.set("mode", std::string(mode));
          g.add_node("DepthToSpace", "d2s", {x}, {y}, a);
          validate(g);
          Tensor tx(dt, xs);
          for (int64_t i = 0; i < storage_bytes(dt, tx.numel()); ++i) static_cast<uint8_t*>(tx.raw())[i] = uint8_t(rng());
          const Shape& ys = g.value(g.nodes[0].outputs[0]).shape;
          Tensor want(dt, ys), got(dt, ys);
          std::vector<TensorView> in = {tx.view()}, ref_out = {want.view()}, out = {got.view()};
          find_reference("DepthToSpace")(g, g.nodes[0], in, ref_out);
          NodeContext ctx{g, g.nodes[0], host_target(), 2};
          ASSERT_EQ(kc->check(ctx), "");
          ThreadPool pool(2);
          kc->create(ctx)->run(in, out, pool);
          EXPECT_EQ(std::memcmp(got.raw(), want.raw(), size_t(storage_bytes(dt, want.numel()))), 0)
              << dtype_name(dt) << " " << mode << " b " << b;
        }
  }
  EXPECT_GE(rows, 1);
}

}  // namespace
}  // namespace lowbit
