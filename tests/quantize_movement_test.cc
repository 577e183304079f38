// Codes through data movement: Concat, Split, Slice and Transpose run on u8 codes between quantized
// convs instead of DequantizeLinear -> fp32 op -> QuantizeLinear (quant/quantize.cc). A Concat's
// inputs and output share one range, so its producers write the codes it takes as they are; an
// input coded otherwise (a Slice of another Concat's output) is requantized by an exact table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "lowbit/io/synthetic.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/quant/calibration.h"
#include "lowbit/quant/quantize.h"
#include "lowbit/runtime/compiled_model.h"
#include "tensor_compare.h"
#include "test_tensors.h"

namespace lowbit {
namespace {

using testutil::cosine;
using testutil::normal_tensor;

struct Net {
  Graph g;
  ValueId conv(ValueId x, int64_t cin, int64_t cout, uint64_t seed, bool relu = true) {
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{3, 3});
    a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    ValueId w = g.add_constant(g.unique_name("w"), normal_tensor({cout, cin, 3, 3}, seed, 0.3f));
    ValueId b = g.add_constant(g.unique_name("b"), normal_tensor({cout}, seed + 1, 0.1f));
    ValueId y = g.add_value(g.unique_name("conv_out"));
    g.add_node("Conv", g.unique_name("conv"), {x, w, b}, {y}, a);
    if (!relu) return y;
    ValueId r = g.add_value(g.unique_name("relu_out"));
    g.add_node("Relu", g.unique_name("relu"), {y}, {r});
    return r;
  }
  ValueId op(const std::string& name, std::vector<ValueId> in, Attributes a = {}, int outputs = 1,
             std::vector<ValueId>* outs = nullptr) {
    std::vector<ValueId> o;
    for (int i = 0; i < outputs; ++i) o.push_back(g.add_value(g.unique_name(name + "_out")));
    g.add_node(name, g.unique_name(name), std::move(in), o, std::move(a));
    if (outs) *outs = o;
    return o[0];
  }
  ValueId ints(std::vector<int64_t> v) {
    Tensor t(DType::i64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return g.add_constant(g.unique_name("i"), t);
  }
};

// input -> a, b -> Concat(a, b) -> Split -> (c0, c1) -> Concat(Slice(cat1), c1') -> Transpose x2 ->
// conv -> output: every movement op reads codes.
Graph movement_net() {
  Net n;
  ValueId x = n.g.add_value("input", DType::f32, {1, 4, 10, 9}, true);
  n.g.inputs.push_back(x);
  ValueId a = n.conv(x, 4, 8, 1), b = n.conv(x, 4, 8, 3);
  Attributes axis1;
  axis1.set("axis", int64_t{1});
  ValueId cat1 = n.op("Concat", {a, b}, axis1);
  std::vector<ValueId> parts;
  n.op("Split", {cat1, n.ints({6, 10})}, axis1, 2, &parts);
  ValueId c0 = n.conv(parts[0], 6, 8, 5), c1 = n.conv(parts[1], 10, 8, 7);
  // A Slice of cat1 carries cat1's codes into a second Concat, whose group is its own: requantized.
  ValueId s = n.op("Slice", {cat1, n.ints({0}), n.ints({4}), n.ints({1})});
  ValueId cat2 = n.op("Concat", {c0, c1, s}, axis1);
  Attributes perm, back;
  perm.set("perm", std::vector<int64_t>{0, 2, 3, 1});
  back.set("perm", std::vector<int64_t>{0, 3, 1, 2});
  ValueId t = n.op("Transpose", {n.op("Transpose", {cat2}, perm)}, back);
  ValueId y = n.conv(t, 20, 5, 9, false);
  n.g.outputs.push_back(y);
  validate(n.g);
  return std::move(n.g);
}

TEST(QuantizeMovement, ConcatSplitSliceTransposeRunOnCodes) {
  CompileOptions o;
  o.threads = 1;
  o.fuse_post_ops = false;
  auto fp32 = CompiledModel::compile(movement_net(), o);
  QuantizeOptions q;
  q.synthetic_samples = 4;
  const Graph qg = quantize_graph(fp32->graph(), calibrate_model(*fp32, q), q);
  std::map<std::string, int> ops;
  for (const Node& n : qg.nodes) ++ops[n.op];
  EXPECT_EQ(ops["QuantizeLinear"], 1);  // the input
  EXPECT_EQ(ops["DequantizeLinear"], 1);  // the output
  EXPECT_EQ(ops["QConv"], 5);
  for (const Node& n : qg.nodes) {
    if (n.op != "Concat" && n.op != "Split" && n.op != "Slice" && n.op != "Transpose") continue;
    SCOPED_TRACE(n.label());
    const QuantParams& in0 = *qg.value(n.inputs[0]).quant;
    ASSERT_EQ(qg.value(n.inputs[0]).dtype, DType::u8);
    for (ValueId v : n.outputs) {
      ASSERT_EQ(qg.value(v).dtype, DType::u8);
      // Codes move: every output, and every Concat input, carries the same parameters.
      EXPECT_EQ(qg.value(v).quant->scale, in0.scale);
      EXPECT_EQ(qg.value(v).quant->zero_point, in0.zero_point);
    }
    if (n.op == "Concat") {
      for (ValueId v : n.inputs) EXPECT_EQ(qg.value(v).quant->scale, in0.scale);
    }
  }
  // The Slice of cat1 entering cat2 is the one input coded otherwise: one exact requantization.
  int tables = 0;
  for (const Node& n : qg.nodes) {
    if (n.op != "QLut") continue;
    ++tables;
    EXPECT_EQ(n.attrs.get_string("op", ""), "Identity");
    const QuantParams &qx = *qg.value(n.inputs[0]).quant, &qy = *qg.value(n.outputs[0]).quant;
    const Tensor& t = *qg.value(n.inputs[1]).constant;
    for (int c = 0; c < 256; ++c) {
      const float real = (static_cast<float>(c) - static_cast<float>(qx.zero_point[0])) * qx.scale[0];
      const int want = std::clamp(static_cast<int>(std::nearbyintf(real / qy.scale[0])) + qy.zero_point[0], 0, 255);
      ASSERT_EQ(t.data<uint8_t>()[c], want) << "code " << c;
    }
  }
  EXPECT_EQ(tables, 1);
  // And the quantized network still computes the fp32 one, on inputs calibration never saw.
  auto qm = CompiledModel::compile(qg, CompileOptions{});
  CompileOptions plain;
  plain.threads = 1;
  auto ref = CompiledModel::compile(movement_net(), plain);
  for (uint64_t seed : {91, 92, 93}) {
    const auto in = synthetic_inputs(ref->graph(), seed);
    EXPECT_GT(cosine(qm->run(in)[0], ref->run(in)[0]), 0.998) << seed;
  }
}

}  // namespace
}  // namespace lowbit
