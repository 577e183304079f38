// Shape inference, dtype checks and error messages of the op schemas (ir/ops_*.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "lowbit/common/error.h"
#include "lowbit/ir/infer_helpers.h"
#include "lowbit/ir/op_params.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/runtime/compiled_model.h"

namespace lowbit {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

class ValidateTest : public ::testing::Test {
 protected:
  Graph g;

  // A runtime graph input of known shape.
  ValueId input(const std::string& name, Shape shape, DType t = DType::f32) {
    ValueId id = g.add_value(name, t, std::move(shape), true);
    g.inputs.push_back(id);
    return id;
  }
  ValueId ints(const std::string& name, const std::vector<int64_t>& v, DType t = DType::i64) {
    Tensor x(t, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) {
      if (t == DType::i64) x.data<int64_t>()[i] = v[i];
      else x.data<int32_t>()[i] = static_cast<int32_t>(v[i]);
    }
    return g.add_constant(name, x);
  }
  ValueId floats(const std::string& name, const std::vector<float>& v, Shape shape = {-1}) {
    if (shape == Shape{-1}) shape = {static_cast<int64_t>(v.size())};
    Tensor x(DType::f32, shape);
    std::copy(v.begin(), v.end(), x.data<float>());
    return g.add_constant(name, x);
  }
  // A constant of the given shape (zeros), e.g. a weight.
  ValueId weight(const std::string& name, Shape shape, DType t = DType::f32) {
    return g.add_constant(name, Tensor(t, std::move(shape)));
  }
  ValueId scalar_i64(const std::string& name, int64_t v) {
    Tensor x(DType::i64, {});
    x.data<int64_t>()[0] = v;
    return g.add_constant(name, x);
  }

  // Adds a node with `nout` fresh outputs, validates the whole graph, returns output `k`.
  const Value& run(const std::string& op, std::vector<ValueId> in, Attributes attrs = {}, int nout = 1, size_t k = 0) {
    std::vector<ValueId> out;
    for (int i = 0; i < nout; ++i) out.push_back(g.add_value(op + "_out" + std::to_string(g.values.size())));
    g.add_node(op, "n" + std::to_string(g.nodes.size()), std::move(in), out, std::move(attrs));
    validate(g);
    return g.value(out[k]);
  }
  Shape shape_of(const std::string& op, std::vector<ValueId> in, Attributes attrs = {}) {
    return run(op, std::move(in), std::move(attrs)).shape;
  }
  // The message of the lowbit::Error that `op` raises (empty if none); the failing node is removed
  // again so that later checks in the same test start from a valid graph.
  std::string error_of(const std::string& op, std::vector<ValueId> in, Attributes attrs = {}, int nout = 1) {
    try {
      run(op, std::move(in), std::move(attrs), nout);
    } catch (const Error& e) {
      g.nodes.pop_back();
      return e.what();
    }
    return "";
  }
};

Attributes attrs(std::initializer_list<std::pair<const std::string, AttrValue>> kv) {
  Attributes a;
  for (auto& [k, v] : kv) a.set(k, v);
  return a;
}
using I = std::vector<int64_t>;

// --- Registry and graph-level checks ---------------------------------------------------------------

TEST(Registry, SupportedOpsAreSortedAndComplete) {
  auto ops = supported_ops();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  for (const char* op : {"Conv", "ConvTranspose", "BatchNormalization", "Relu", "Clip", "Softmax", "MaxPool",
                         "AveragePool", "GlobalAveragePool", "ReduceMean", "Gemm", "MatMul", "Flatten", "Dropout",
                         "Identity", "Resize", "Pad", "Add", "Where", "Reshape", "Transpose", "Concat", "Split",
                         "Shape", "Gather", "Cast", "Slice", "Unsqueeze", "Squeeze", "Constant", "ConstantOfShape",
                         "Range", "Expand", "Tile"})
    EXPECT_NE(find_schema(op), nullptr) << op;
  EXPECT_EQ(find_schema("Foo"), nullptr);
}

TEST_F(ValidateTest, UnknownOp) {
  ValueId x = input("x", {1, 3});
  EXPECT_EQ(error_of("Foo", {x}), "node 'n0' (Foo): unsupported op 'Foo'");
}

TEST_F(ValidateTest, DynamicInputShape) {
  ValueId x = g.add_value("x", DType::f32, {-1, 3, 224, 224}, true);
  g.inputs.push_back(x);
  std::string msg = error_of("Relu", {x});
  EXPECT_THAT(msg, HasSubstr("graph input 'x'"));
  EXPECT_THAT(msg, HasSubstr("?x3x224x224"));
  EXPECT_THAT(msg, HasSubstr("--input-shape x="));
}

TEST_F(ValidateTest, UnknownInputShape) {
  ValueId x = g.add_value("data", DType::f32);
  g.inputs.push_back(x);
  std::string msg = error_of("Relu", {x});
  EXPECT_THAT(msg, HasSubstr("graph input 'data'"));
  EXPECT_THAT(msg, HasSubstr("--input-shape data="));
}

TEST_F(ValidateTest, Arity) {
  ValueId x = input("x", {1, 3, 8, 8});
  EXPECT_THAT(error_of("Conv", {x}), HasSubstr("node 'n0' (Conv): expects 2 to 4 inputs, got 1"));
  EXPECT_THAT(error_of("Relu", {x}, {}, 2), HasSubstr("expects 1 output, got 2"));
}

TEST_F(ValidateTest, TrailingOmittedInputsDoNotCount) {
  ValueId x = input("x", {1, 3, 8, 8}), w = weight("w", {4, 3, 3, 3});
  EXPECT_EQ(shape_of("Conv", {x, w, kNoValue, kNoValue}), (Shape{1, 4, 6, 6}));
  EXPECT_THAT(error_of("Relu", {kNoValue}), HasSubstr("expects 1 input, got 0"));
}

TEST_F(ValidateTest, UseBeforeDefinition) {
  ValueId x = input("x", {2, 2});
  ValueId t = g.add_value("t"), y = g.add_value("y");
  g.add_node("Relu", "first", {t}, {y});  // reads t before its producer
  g.add_node("Relu", "second", {x}, {t});
  g.outputs.push_back(y);
  try {
    validate(g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("node 'first' (Relu): input 't' is used before it is defined"));
  }
}

TEST_F(ValidateTest, ValidateNodeInfersOneNode) {
  ValueId x = input("x", {2, 5});
  ValueId y = g.add_value("y");
  g.add_node("Relu", "r", {x}, {y});
  validate_node(g, g.nodes[0]);
  EXPECT_TRUE(g.value(y).shape_known);
  EXPECT_EQ(g.value(y).shape, (Shape{2, 5}));
}

// --- Convolution ------------------------------------------------------------------------------------

TEST_F(ValidateTest, ConvStem) {
  ValueId x = input("x", {1, 3, 224, 224}), w = weight("w", {64, 3, 7, 7}), b = weight("b", {64});
  const Value& y = run("Conv", {x, w, b}, attrs({{"strides", I{2, 2}}, {"pads", I{3, 3, 3, 3}}}));
  EXPECT_EQ(y.shape, (Shape{1, 64, 112, 112}));
  EXPECT_EQ(y.dtype, DType::f32);
  Conv2dParams p = conv2d_params(g, g.nodes[0]);
  EXPECT_TRUE(p.has_bias);
  EXPECT_EQ(p.macs(), 1 * 64 * 112 * 112 * 3 * 7 * 7);
}

TEST_F(ValidateTest, ConvAutoPadSame) {
  // 5 wide, kernel 2, stride 1: one pad in total, placed at the end (UPPER) or beginning (LOWER).
  ValueId x = input("x", {1, 1, 5, 5}), w = weight("w", {1, 1, 2, 2});
  run("Conv", {x, w}, attrs({{"auto_pad", std::string("SAME_UPPER")}}));
  run("Conv", {x, w}, attrs({{"auto_pad", std::string("SAME_LOWER")}}));
  Conv2dParams up = conv2d_params(g, g.nodes[0]), lo = conv2d_params(g, g.nodes[1]);
  EXPECT_EQ(up.OH, 5);
  EXPECT_EQ(up.OW, 5);
  EXPECT_EQ(up.pad_top, 0);
  EXPECT_EQ(up.pad_bottom, 1);
  EXPECT_EQ(up.pad_left, 0);
  EXPECT_EQ(up.pad_right, 1);
  EXPECT_EQ(lo.pad_top, 1);
  EXPECT_EQ(lo.pad_bottom, 0);
  EXPECT_EQ(lo.pad_left, 1);
  EXPECT_EQ(lo.pad_right, 0);
  // Stride 2, kernel 3 on 6: out 3, total pad (3-1)*2+3-6 = 1.
  ValueId x6 = input("x6", {1, 1, 6, 6}), w3 = weight("w3", {1, 1, 3, 3});
  EXPECT_EQ(shape_of("Conv", {x6, w3}, attrs({{"auto_pad", std::string("SAME_UPPER")}, {"strides", I{2, 2}}})),
            (Shape{1, 1, 3, 3}));
  Conv2dParams s2 = conv2d_params(g, g.nodes[2]);
  EXPECT_EQ(s2.pad_top, 0);
  EXPECT_EQ(s2.pad_bottom, 1);
  EXPECT_EQ(shape_of("Conv", {x6, w3}, attrs({{"auto_pad", std::string("VALID")}, {"strides", I{2, 2}}})),
            (Shape{1, 1, 2, 2}));
}

TEST_F(ValidateTest, ConvDilationAndAsymmetricPads) {
  ValueId x = input("x", {2, 4, 10, 12}), w = weight("w", {8, 4, 3, 3});
  EXPECT_EQ(shape_of("Conv", {x, w}, attrs({{"dilations", I{2, 2}}})), (Shape{2, 8, 6, 8}));
  EXPECT_EQ(shape_of("Conv", {x, w}, attrs({{"pads", I{1, 0, 0, 2}}})), (Shape{2, 8, 9, 12}));
  Conv2dParams p = conv2d_params(g, g.nodes[1]);
  EXPECT_EQ(p.pad_top, 1);
  EXPECT_EQ(p.pad_left, 0);
  EXPECT_EQ(p.pad_bottom, 0);
  EXPECT_EQ(p.pad_right, 2);
}

TEST_F(ValidateTest, ConvDepthwiseAndGroups) {
  ValueId x = input("x", {1, 32, 10, 10}), dw = weight("dw", {32, 1, 3, 3}), gw = weight("gw", {16, 8, 1, 1});
  EXPECT_EQ(shape_of("Conv", {x, dw}, attrs({{"group", int64_t{32}}, {"pads", I{1, 1, 1, 1}}})),
            (Shape{1, 32, 10, 10}));
  EXPECT_TRUE(conv2d_params(g, g.nodes[0]).is_depthwise());
  EXPECT_EQ(shape_of("Conv", {x, gw}, attrs({{"group", int64_t{4}}})), (Shape{1, 16, 10, 10}));
  Conv2dParams p = conv2d_params(g, g.nodes[1]);
  EXPECT_EQ(p.C_per_group(), 8);
  EXPECT_EQ(p.M_per_group(), 4);
  EXPECT_TRUE(p.is_pointwise());
}

TEST_F(ValidateTest, ConvFusedActivationAndResidual) {
  ValueId x = input("x", {1, 4, 8, 8}), w = weight("w", {4, 4, 3, 3}), r = input("r", {1, 4, 8, 8});
  run("Conv", {x, w, kNoValue, r},
      attrs({{"pads", I{1, 1, 1, 1}}, {"act_min", 0.0f}, {"act_max", 6.0f}}));
  Conv2dParams p = conv2d_params(g, g.nodes[0]);
  EXPECT_TRUE(p.has_residual);
  EXPECT_FALSE(p.has_bias);
  EXPECT_EQ(p.act_min, 0.0f);
  EXPECT_EQ(p.act_max, 6.0f);
  ValueId r2 = input("r2", {1, 4, 6, 6});
  EXPECT_THAT(error_of("Conv", {x, w, kNoValue, r2}, attrs({{"pads", I{1, 1, 1, 1}}})),
              HasSubstr("residual input must have the output shape 1x4x8x8, got 1x4x6x6"));
  EXPECT_THAT(error_of("Conv", {x, w}, attrs({{"act_min", 6.0f}, {"act_max", 0.0f}})), HasSubstr("exceeds act_max"));
}

TEST_F(ValidateTest, ConvDefaultsHaveNoClamp) {
  ValueId x = input("x", {1, 1, 4, 4}), w = weight("w", {1, 1, 1, 1});
  run("Conv", {x, w});
  Conv2dParams p = conv2d_params(g, g.nodes[0]);
  EXPECT_EQ(p.act_min, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(p.act_max, std::numeric_limits<float>::infinity());
}

TEST_F(ValidateTest, ConvErrors) {
  ValueId x = input("x", {1, 32, 10, 10});
  EXPECT_THAT(error_of("Conv", {x, weight("w8", {16, 32, 3, 3}, DType::i8)}),
              HasSubstr("node 'n0' (Conv): input 1 (W) has dtype i8, expected f32"));
  EXPECT_THAT(error_of("Conv", {x, weight("wg", {32, 10, 3, 3})}, attrs({{"group", int64_t{3}}})),
              HasSubstr("group 3 does not divide the 32 input channels"));
  EXPECT_THAT(error_of("Conv", {x, weight("wc", {16, 16, 3, 3})}), HasSubstr("weight shape 16x16x3x3 does not match"));
  EXPECT_THAT(error_of("Conv", {x, weight("wb", {16, 32, 3, 3}), weight("b", {8})}),
              HasSubstr("bias B must have shape 16, got 8"));
  EXPECT_THAT(error_of("Conv", {x, weight("wk", {16, 32, 3, 3})}, attrs({{"kernel_shape", I{5, 5}}})),
              HasSubstr("kernel_shape [5, 5] does not match"));
  EXPECT_THAT(error_of("Conv", {x, weight("wbig", {16, 32, 11, 11})}), HasSubstr("does not fit"));
  ValueId x1 = input("x1", {1, 4, 16});
  EXPECT_THAT(error_of("Conv", {x1, weight("w1", {4, 4, 3})}),
              HasSubstr("node 'n0' (Conv): only 2-D convolution is supported (input rank 3)"));
}

TEST_F(ValidateTest, ConvTranspose) {
  ValueId x = input("x", {1, 4, 5, 5}), w = weight("w", {4, 2, 3, 3}), b = weight("b", {4});
  // 2*(5-1) + 1 + 3 - 2 = 10 (matches torch.conv_transpose2d); group 2 doubles M.
  EXPECT_EQ(shape_of("ConvTranspose", {x, w, b},
                     attrs({{"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}, {"output_padding", I{1, 1}},
                            {"group", int64_t{2}}})),
            (Shape{1, 4, 10, 10}));
  EXPECT_EQ(shape_of("ConvTranspose", {x, w}, attrs({{"strides", I{2, 2}}, {"output_shape", I{10, 9}}})),
            (Shape{1, 2, 10, 9}));
  EXPECT_EQ(shape_of("ConvTranspose", {x, w}, attrs({{"strides", I{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}})),
            (Shape{1, 2, 10, 10}));
  EXPECT_EQ(shape_of("ConvTranspose", {x, w}), (Shape{1, 2, 7, 7}));
  EXPECT_THAT(error_of("ConvTranspose", {x, weight("wbad", {3, 2, 3, 3})}), HasSubstr("W[0] must equal C"));
}

// --- Normalization and activations ------------------------------------------------------------------

TEST_F(ValidateTest, BatchNormalization) {
  ValueId x = input("x", {2, 8, 4, 4});
  std::vector<ValueId> in = {x, weight("s", {8}), weight("b", {8}), weight("m", {8}), weight("v", {8})};
  EXPECT_EQ(shape_of("BatchNormalization", in), (Shape{2, 8, 4, 4}));
  const Value& extra = run("BatchNormalization", in, {}, 3, 2);
  EXPECT_EQ(extra.shape, (Shape{8}));
  in[3] = weight("m4", {4});
  EXPECT_THAT(error_of("BatchNormalization", in), HasSubstr("input 3 (input_mean) must have shape 8, got 4"));
}

TEST_F(ValidateTest, UnaryOps) {
  ValueId x = input("x", {2, 3, 4});
  for (const char* op : {"Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Exp", "Neg", "Abs",
                         "Sqrt", "Identity"}) {
    const Value& y = run(op, {x});
    EXPECT_EQ(y.shape, (Shape{2, 3, 4})) << op;
    EXPECT_EQ(y.dtype, DType::f32) << op;
  }
  ValueId i = input("i", {3}, DType::i64);
  EXPECT_EQ(run("Neg", {i}).dtype, DType::i64);
  EXPECT_EQ(run("Identity", {i}).dtype, DType::i64);
  EXPECT_THAT(error_of("Relu", {i}), HasSubstr("input 0 (X) has dtype i64, expected f32"));
}

TEST_F(ValidateTest, Clip) {
  ValueId x = input("x", {1, 8}), lo = floats("lo", {0.f}, {}), hi = floats("hi", {6.f}, {});
  EXPECT_EQ(shape_of("Clip", {x, lo, hi}), (Shape{1, 8}));
  EXPECT_EQ(shape_of("Clip", {x, kNoValue, hi}), (Shape{1, 8}));
  EXPECT_EQ(shape_of("Clip", {x}), (Shape{1, 8}));
  EXPECT_THAT(error_of("Clip", {x, floats("v", {0.f, 1.f})}), HasSubstr("min must be a scalar"));
}

TEST_F(ValidateTest, Softmax) {
  ValueId x = input("x", {2, 10});
  EXPECT_EQ(shape_of("Softmax", {x}), (Shape{2, 10}));
  EXPECT_EQ(shape_of("Softmax", {x}, attrs({{"axis", int64_t{1}}, {"coerce_2d", int64_t{1}}})), (Shape{2, 10}));
  EXPECT_THAT(error_of("Softmax", {x}, attrs({{"axis", int64_t{2}}})), HasSubstr("axis 2 is out of range for rank 2"));
}

// --- Pooling ----------------------------------------------------------------------------------------

TEST_F(ValidateTest, MaxPool) {
  ValueId x = input("x", {1, 64, 112, 112});
  EXPECT_EQ(shape_of("MaxPool", {x}, attrs({{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}})),
            (Shape{1, 64, 56, 56}));
  EXPECT_THAT(error_of("MaxPool", {x}, attrs({{"kernel_shape", I{3, 3}}}), 2),
              HasSubstr("node 'n1' (MaxPool): MaxPool Indices output unsupported"));
  EXPECT_THAT(error_of("MaxPool", {x}), HasSubstr("kernel_shape attribute is required"));
  ValueId x1 = input("x1", {1, 4, 16});
  EXPECT_THAT(error_of("MaxPool", {x1}, attrs({{"kernel_shape", I{2}}})),
              HasSubstr("only 2-D pooling is supported (input rank 3)"));
}

TEST_F(ValidateTest, PoolCeilMode) {
  ValueId x = input("x", {1, 1, 6, 6});
  Attributes a = attrs({{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}});
  EXPECT_EQ(shape_of("MaxPool", {x}, a), (Shape{1, 1, 2, 2}));
  a.set("ceil_mode", int64_t{1});
  EXPECT_EQ(shape_of("MaxPool", {x}, a), (Shape{1, 1, 3, 3}));
  // The last window would start in the end padding: dropped (torch gives 3, not 4).
  ValueId x5 = input("x5", {1, 1, 5, 5});
  EXPECT_EQ(shape_of("AveragePool", {x5}, attrs({{"kernel_shape", I{2, 2}}, {"strides", I{2, 2}},
                                                 {"pads", I{1, 1, 1, 1}}, {"ceil_mode", int64_t{1}}})),
            (Shape{1, 1, 3, 3}));
}

TEST_F(ValidateTest, PoolAutoPad) {
  ValueId x = input("x", {1, 2, 5, 5});
  EXPECT_EQ(shape_of("AveragePool", {x}, attrs({{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}},
                                                {"auto_pad", std::string("SAME_UPPER")},
                                                {"count_include_pad", int64_t{1}}})),
            (Shape{1, 2, 3, 3}));
  Pool2dParams p = pool2d_params(g, g.nodes[0]);
  EXPECT_EQ(p.pad_top, 1);
  EXPECT_EQ(p.pad_bottom, 1);
  EXPECT_TRUE(p.count_include_pad);
  run("MaxPool", {x}, attrs({{"kernel_shape", I{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}}));
  Pool2dParams q = pool2d_params(g, g.nodes[1]);
  EXPECT_EQ(q.OH, 5);
  EXPECT_EQ(q.pad_top, 1);
  EXPECT_EQ(q.pad_bottom, 0);
  EXPECT_EQ(q.pad_left, 1);
  EXPECT_EQ(q.pad_right, 0);
  EXPECT_FALSE(q.count_include_pad);
}

TEST_F(ValidateTest, GlobalPools) {
  ValueId x = input("x", {2, 512, 7, 7});
  EXPECT_EQ(shape_of("GlobalAveragePool", {x}), (Shape{2, 512, 1, 1}));
  EXPECT_EQ(shape_of("GlobalMaxPool", {x}), (Shape{2, 512, 1, 1}));
}

TEST_F(ValidateTest, PoolsOnQuantizedActivations) {
  ValueId q = input("q", {1, 8, 6, 6}, DType::u8);
  EXPECT_EQ(run("MaxPool", {q}, attrs({{"kernel_shape", I{2, 2}}, {"strides", I{2, 2}}})).dtype, DType::u8);
  EXPECT_EQ(run("GlobalAveragePool", {q}).dtype, DType::u8);
  EXPECT_EQ(run("AveragePool", {q}, attrs({{"kernel_shape", I{2, 2}}})).dtype, DType::u8);
  EXPECT_THAT(error_of("AveragePool", {input("i8b", {1, 8, 6, 6}, DType::i8)}, attrs({{"kernel_shape", I{2, 2}}})),
              HasSubstr("input 0 (X) has dtype i8, expected one of f32, u8"));
  EXPECT_THAT(error_of("MaxPool", {input("i8", {1, 8, 6, 6}, DType::i8)}, attrs({{"kernel_shape", I{2, 2}}})),
              HasSubstr("input 0 (X) has dtype i8, expected one of f32, u8"));
}

TEST(ResolveAxis, Modes) {
  auto a = resolve_axis("NOTSET", 7, 3, 2, 1, 1, 1, false);
  EXPECT_EQ(a.out, 4);
  auto b = resolve_axis("SAME_LOWER", 7, 4, 1, 1, 0, 0, false);
  EXPECT_EQ(b.out, 7);
  EXPECT_EQ(b.pad_begin, 2);
  EXPECT_EQ(b.pad_end, 1);
  auto c = resolve_axis("SAME_UPPER", 7, 4, 1, 1, 0, 0, false);
  EXPECT_EQ(c.pad_begin, 1);
  EXPECT_EQ(c.pad_end, 2);
  auto d = resolve_axis("VALID", 7, 3, 2, 2, 5, 5, false);  // explicit pads ignored
  EXPECT_EQ(d.out, 2);
  EXPECT_EQ(d.pad_begin, 0);
}

// --- Reductions and matrix products -----------------------------------------------------------------

TEST_F(ValidateTest, Reductions) {
  ValueId x = input("x", {2, 8, 4, 4});
  EXPECT_EQ(shape_of("ReduceMean", {x}, attrs({{"axes", I{2, 3}}})), (Shape{2, 8, 1, 1}));
  EXPECT_EQ(shape_of("ReduceMean", {x}, attrs({{"axes", I{-1, -2}}, {"keepdims", int64_t{0}}})), (Shape{2, 8}));
  EXPECT_EQ(shape_of("ReduceMean", {x}, attrs({{"keepdims", int64_t{0}}})), (Shape{}));
  EXPECT_EQ(shape_of("ReduceSum", {x, ints("ax", {1})}), (Shape{2, 1, 4, 4}));
  EXPECT_EQ(shape_of("ReduceMax", {x}, attrs({{"axes", I{0}}, {"keepdims", int64_t{0}}})), (Shape{8, 4, 4}));
  EXPECT_THAT(error_of("ReduceMean", {x}, attrs({{"axes", I{1, -3}}})), HasSubstr("contain a duplicate"));
}

TEST_F(ValidateTest, Gemm) {
  ValueId a = input("a", {1, 512}), b = weight("b", {1000, 512}), c = weight("c", {1000});
  EXPECT_EQ(shape_of("Gemm", {a, b, c}, attrs({{"transB", int64_t{1}}, {"act_min", 0.0f}})), (Shape{1, 1000}));
  EXPECT_EQ(shape_of("Gemm", {a, weight("b2", {512, 10})}), (Shape{1, 10}));
  EXPECT_THAT(error_of("Gemm", {a, b, c}), HasSubstr("inner dimensions do not match"));
  EXPECT_THAT(error_of("Gemm", {a, b, weight("c2", {999})}, attrs({{"transB", int64_t{1}}})),
              HasSubstr("C of shape 999 cannot be broadcast to 1x1000"));
}

TEST_F(ValidateTest, MatMul) {
  ValueId a3 = input("a3", {2, 3, 4}), b2 = weight("b2", {4, 5}), v4 = input("v4", {4});
  EXPECT_EQ(shape_of("MatMul", {a3, b2}), (Shape{2, 3, 5}));
  EXPECT_EQ(shape_of("MatMul", {v4, b2}), (Shape{5}));
  EXPECT_EQ(shape_of("MatMul", {a3, v4}), (Shape{2, 3}));
  EXPECT_EQ(shape_of("MatMul", {v4, v4}), (Shape{}));
  EXPECT_EQ(shape_of("MatMul", {input("a", {1, 3, 4}), weight("b", {7, 4, 5})}), (Shape{7, 3, 5}));
  EXPECT_THAT(error_of("MatMul", {a3, weight("bad", {3, 5})}), HasSubstr("inner dimensions do not match"));
}

// --- Utilities --------------------------------------------------------------------------------------

TEST_F(ValidateTest, FlattenAndDropout) {
  ValueId x = input("x", {2, 3, 4, 5});
  EXPECT_EQ(shape_of("Flatten", {x}), (Shape{2, 60}));
  EXPECT_EQ(shape_of("Flatten", {x}, attrs({{"axis", int64_t{0}}})), (Shape{1, 120}));
  EXPECT_EQ(shape_of("Flatten", {x}, attrs({{"axis", int64_t{-1}}})), (Shape{24, 5}));
  EXPECT_EQ(shape_of("Flatten", {x}, attrs({{"axis", int64_t{4}}})), (Shape{120, 1}));
  const Value& mask = run("Dropout", {x}, {}, 2, 1);
  EXPECT_EQ(mask.dtype, DType::boolean);
  EXPECT_EQ(mask.shape, (Shape{2, 3, 4, 5}));
}

TEST_F(ValidateTest, Resize) {
  ValueId x = input("x", {1, 3, 8, 10});
  ValueId scales = floats("scales", {1, 1, 2, 2});
  EXPECT_EQ(shape_of("Resize", {x, kNoValue, scales}), (Shape{1, 3, 16, 20}));
  EXPECT_EQ(shape_of("Resize", {x, kNoValue, kNoValue, ints("sizes", {1, 3, 5, 7})},
                     attrs({{"mode", std::string("linear")}, {"coordinate_transformation_mode",
                                                              std::string("align_corners")}})),
            (Shape{1, 3, 5, 7}));
  // An empty scales tensor means "not given" (older exporters).
  EXPECT_EQ(shape_of("Resize", {x, floats("roi", {}), floats("empty", {}), ints("sizes2", {1, 3, 4, 4})}),
            (Shape{1, 3, 4, 4}));
  EXPECT_EQ(shape_of("Resize", {x, kNoValue, floats("half", {1, 1, 0.5f, 0.5f})}), (Shape{1, 3, 4, 5}));
  EXPECT_THAT(error_of("Resize", {x, kNoValue, scales}, attrs({{"mode", std::string("cubic")}})),
              HasSubstr("Resize mode 'cubic' is not supported"));
  EXPECT_THAT(error_of("Resize", {x, kNoValue, input("dyn", {4})}),
              HasSubstr("Resize's scales input must be constant after folding (got computed value 'dyn')"));
  EXPECT_THAT(error_of("Resize", {x, kNoValue, floats("s2", {1, 2, 2, 2})}, attrs({{"mode", std::string("linear")}})),
              HasSubstr("linear Resize can only scale H and W"));
  EXPECT_THAT(error_of("Resize", {x}), HasSubstr("exactly one of scales and sizes"));
}

TEST_F(ValidateTest, Pad) {
  ValueId x = input("x", {1, 3, 4, 4});
  EXPECT_EQ(shape_of("Pad", {x, ints("p", {0, 0, 1, 2, 0, 0, 3, 4})}), (Shape{1, 3, 8, 10}));
  EXPECT_EQ(shape_of("Pad", {x, ints("p2", {0, 0, 1, 1, 0, 0, 1, 1}), floats("v", {1.f}, {})},
                     attrs({{"mode", std::string("reflect")}})),
            (Shape{1, 3, 6, 6}));
  EXPECT_EQ(shape_of("Pad", {x, ints("p3", {0, 0, -1, 0, 0, 0, -1, 0})}), (Shape{1, 3, 2, 4}));
  EXPECT_THAT(error_of("Pad", {x, ints("p4", {0, 0, 4, 0, 0, 0, 0, 0})}, attrs({{"mode", std::string("reflect")}})),
              HasSubstr("must be smaller than the padded dimension"));
  EXPECT_THAT(error_of("Pad", {x, ints("p5", {1, 1})}), HasSubstr("must have 8 values"));
  EXPECT_THAT(error_of("Pad", {x, ints("p6", {0, 0, 0, 0, 0, 0, 0, 0})}, attrs({{"mode", std::string("wrap")}})),
              HasSubstr("Pad mode 'wrap' is not supported"));
}

// --- Elementwise ------------------------------------------------------------------------------------

TEST(Broadcast, Shapes) {
  EXPECT_EQ(broadcast_shapes({2, 3, 4}, {4}), (Shape{2, 3, 4}));
  EXPECT_EQ(broadcast_shapes({2, 1, 4}, {3, 1}), (Shape{2, 3, 4}));
  EXPECT_EQ(broadcast_shapes({}, {5, 1}), (Shape{5, 1}));
  EXPECT_EQ(broadcast_shapes({0, 1}, {1, 3}), (Shape{0, 3}));
  EXPECT_FALSE(broadcast_shapes({2, 3}, {4}).has_value());
  EXPECT_TRUE(broadcastable_to({1, 4}, {3, 4}));
  EXPECT_FALSE(broadcastable_to({3, 4}, {1, 4}));
}

TEST_F(ValidateTest, Arithmetic) {
  ValueId a = input("a", {2, 1, 4}), b = weight("b", {3, 1});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Min", "Max"}) {
    const Value& y = run(op, {a, b});
    EXPECT_EQ(y.shape, (Shape{2, 3, 4})) << op;
    EXPECT_EQ(y.dtype, DType::f32) << op;
  }
  EXPECT_EQ(shape_of("Max", {a, b, weight("c", {5, 1, 1, 1})}), (Shape{5, 2, 3, 4}));
  ValueId i = input("i", {3}, DType::i64);
  EXPECT_EQ(run("Mul", {i, ints("k", {2})}).dtype, DType::i64);
  EXPECT_EQ(run("Pow", {a, ints("e", {2})}).dtype, DType::f32);
  EXPECT_THAT(error_of("Add", {a, i}), HasSubstr("inputs 0 and 1 must have the same dtype (got f32 and i64)"));
  EXPECT_THAT(error_of("Add", {a, weight("bad", {2, 3})}),
              HasSubstr("input shapes are not broadcast-compatible (2x1x4, 2x3)"));
  ValueId q = input("q", {3}, DType::i8);
  EXPECT_THAT(error_of("Add", {q, q}), HasSubstr("input 0 has dtype i8, expected one of f32, i64, i32"));
}

TEST_F(ValidateTest, ComparisonsAndWhere) {
  ValueId a = input("a", {2, 3}), b = weight("b", {3});
  for (const char* op : {"Equal", "Less", "Greater"}) {
    const Value& y = run(op, {a, b});
    EXPECT_EQ(y.dtype, DType::boolean) << op;
    EXPECT_EQ(y.shape, (Shape{2, 3})) << op;
  }
  ValueId cond = input("cond", {4, 1, 3}, DType::boolean);
  const Value& w = run("Where", {cond, a, b});
  EXPECT_EQ(w.shape, (Shape{4, 2, 3}));
  EXPECT_EQ(w.dtype, DType::f32);
  EXPECT_THAT(error_of("Where", {a, a, b}), HasSubstr("input 0 (condition) has dtype f32, expected bool"));
}

// --- Tensor and shape ops ---------------------------------------------------------------------------

TEST_F(ValidateTest, Reshape) {
  ValueId x = input("x", {2, 3, 4});
  EXPECT_EQ(shape_of("Reshape", {x, ints("s1", {0, -1})}), (Shape{2, 12}));
  EXPECT_EQ(shape_of("Reshape", {x, ints("s2", {-1})}), (Shape{24}));
  EXPECT_EQ(shape_of("Reshape", {x, ints("s3", {4, 0, 2}, DType::i32)}), (Shape{4, 3, 2}));
  EXPECT_THAT(error_of("Reshape", {x, ints("s4", {-1, -1})}), HasSubstr("has more than one -1"));
  EXPECT_THAT(error_of("Reshape", {x, ints("s5", {5, -1})}), HasSubstr("cannot reshape 2x3x4 (24 elements)"));
  EXPECT_THAT(error_of("Reshape", {x, ints("s6", {0, 0, 0, 0})}), HasSubstr("copies dimension 3"));
  EXPECT_THAT(error_of("Reshape", {x, ints("s7", {0, 12})}, attrs({{"allowzero", int64_t{1}}})),
              HasSubstr("cannot reshape"));
  ValueId shp = input("shp", {2}, DType::i64);
  EXPECT_THAT(error_of("Reshape", {x, shp}),
              HasSubstr("(Reshape): Reshape's shape input must be constant after folding "
                        "(got computed value 'shp')"));
}

TEST_F(ValidateTest, Transpose) {
  ValueId x = input("x", {2, 3, 4});
  EXPECT_EQ(shape_of("Transpose", {x}), (Shape{4, 3, 2}));
  EXPECT_EQ(shape_of("Transpose", {x}, attrs({{"perm", I{0, 2, 1}}})), (Shape{2, 4, 3}));
  EXPECT_THAT(error_of("Transpose", {x}, attrs({{"perm", I{0, 0, 1}}})), HasSubstr("is not a permutation"));
}

TEST_F(ValidateTest, Concat) {
  ValueId a = input("a", {1, 2, 4}), b = input("b", {1, 3, 4});
  EXPECT_EQ(shape_of("Concat", {a, b, a}, attrs({{"axis", int64_t{1}}})), (Shape{1, 7, 4}));
  EXPECT_EQ(shape_of("Concat", {a, b}, attrs({{"axis", int64_t{-2}}})), (Shape{1, 5, 4}));
  EXPECT_THAT(error_of("Concat", {a, b}, attrs({{"axis", int64_t{2}}})),
              HasSubstr("input 1 has shape 1x3x4, incompatible with 1x2x4"));
  EXPECT_THAT(error_of("Concat", {a, b}), HasSubstr("axis attribute is required"));
}

TEST_F(ValidateTest, Split) {
  ValueId x = input("x", {2, 6});
  EXPECT_EQ(run("Split", {x}, attrs({{"axis", int64_t{1}}}), 3, 2).shape, (Shape{2, 2}));
  EXPECT_EQ(run("Split", {x, ints("sp", {1, 5})}, attrs({{"axis", int64_t{-1}}}), 2, 1).shape, (Shape{2, 5}));
  // num_outputs 4 on 6 would leave an empty last chunk ([2, 2, 2, 0]).
  EXPECT_THAT(error_of("Split", {x}, attrs({{"axis", int64_t{1}}, {"num_outputs", int64_t{4}}}), 4),
              HasSubstr("cannot be split into 4 parts"));
  EXPECT_THAT(error_of("Split", {x}, attrs({{"axis", int64_t{1}}}), 4), HasSubstr("cannot be split into 4 parts"));
  EXPECT_THAT(error_of("Split", {x, ints("sp2", {1, 2})}, attrs({{"axis", int64_t{1}}}), 2), HasSubstr("sums to 3"));
}

TEST_F(ValidateTest, SplitUnevenLastChunk) {
  ValueId x = input("x", {7});
  EXPECT_EQ(run("Split", {x}, attrs({{"num_outputs", int64_t{3}}}), 3, 0).shape, (Shape{3}));
  EXPECT_EQ(g.value(g.nodes[0].outputs[2]).shape, (Shape{1}));
}

TEST_F(ValidateTest, ShapeOp) {
  ValueId x = input("x", {1, 3, 224, 224});
  const Value& s = run("Shape", {x});
  EXPECT_EQ(s.dtype, DType::i64);
  EXPECT_EQ(s.shape, (Shape{4}));
  EXPECT_EQ(shape_of("Shape", {x}, attrs({{"start", int64_t{-2}}})), (Shape{2}));
  EXPECT_EQ(shape_of("Shape", {x}, attrs({{"start", int64_t{1}}, {"end", int64_t{-1}}})), (Shape{2}));
  EXPECT_EQ(shape_of("Shape", {x}, attrs({{"start", int64_t{3}}, {"end", int64_t{1}}})), (Shape{0}));
}

TEST_F(ValidateTest, Gather) {
  ValueId x = input("x", {5, 6, 7});
  EXPECT_EQ(shape_of("Gather", {x, scalar_i64("i", -1)}), (Shape{6, 7}));
  EXPECT_EQ(shape_of("Gather", {x, input("idx", {2, 3}, DType::i32)}, attrs({{"axis", int64_t{1}}})),
            (Shape{5, 2, 3, 7}));
  EXPECT_THAT(error_of("Gather", {x, ints("bad", {0, 7})}, attrs({{"axis", int64_t{-1}}})),
              HasSubstr("index 7 is out of range for axis 2 of size 7"));
  EXPECT_THAT(error_of("Gather", {x, input("fidx", {2})}), HasSubstr("input 1 (indices) has dtype f32"));
}

TEST_F(ValidateTest, Cast) {
  ValueId x = input("x", {2, 2});
  const std::pair<int64_t, DType> table[] = {{1, DType::f32}, {7, DType::i64}, {6, DType::i32},
                                             {2, DType::u8},  {3, DType::i8},  {9, DType::boolean}};
  for (auto [to, t] : table) EXPECT_EQ(run("Cast", {x}, attrs({{"to", to}})).dtype, t) << to;
  EXPECT_THAT(error_of("Cast", {x}, attrs({{"to", int64_t{10}}})), HasSubstr("Cast to ONNX type 10 is not supported"));
}

TEST_F(ValidateTest, Slice) {
  ValueId x = input("x", {10, 20});
  EXPECT_EQ(shape_of("Slice", {x, ints("s", {1}), ints("e", {kMax}), ints("a", {1})}), (Shape{10, 19}));
  EXPECT_EQ(shape_of("Slice", {x, ints("s2", {-1}), ints("e2", {kMin}), ints("a2", {0}), ints("st2", {-1})}),
            (Shape{10, 20}));
  EXPECT_EQ(shape_of("Slice", {x, ints("s3", {0, 1}), ints("e3", {-1, 20}), kNoValue, ints("st3", {3, 2})}),
            (Shape{3, 10}));
  EXPECT_EQ(shape_of("Slice", {x, ints("s4", {8}), ints("e4", {2}), ints("a4", {-2}), ints("st4", {-2})}),
            (Shape{3, 20}));
  EXPECT_EQ(shape_of("Slice", {x, ints("s5", {5}), ints("e5", {3})}), (Shape{0, 20}));
  EXPECT_THAT(error_of("Slice", {x, ints("s6", {0}), ints("e6", {1}), ints("a6", {0}), ints("st6", {0})}),
              HasSubstr("contain 0"));
  EXPECT_THAT(error_of("Slice", {x, input("dyn", {1}, DType::i64), ints("e7", {1})}),
              HasSubstr("Slice's starts input must be constant after folding (got computed value 'dyn')"));
}

TEST_F(ValidateTest, SqueezeUnsqueeze) {
  ValueId x = input("x", {3, 4});
  EXPECT_EQ(shape_of("Unsqueeze", {x, ints("a", {0, -1})}), (Shape{1, 3, 4, 1}));
  EXPECT_EQ(shape_of("Unsqueeze", {x, ints("b", {1})}), (Shape{3, 1, 4}));
  ValueId y = input("y", {1, 3, 1, 4});
  EXPECT_EQ(shape_of("Squeeze", {y}), (Shape{3, 4}));
  EXPECT_EQ(shape_of("Squeeze", {y, ints("c", {-2})}), (Shape{1, 3, 4}));
  EXPECT_THAT(error_of("Squeeze", {y, ints("d", {1})}), HasSubstr("cannot squeeze axis 1 of size 3"));
}

TEST_F(ValidateTest, Constants) {
  Tensor t(DType::i32, {2, 3});
  EXPECT_EQ(run("Constant", {}, attrs({{"value", t}})).shape, (Shape{2, 3}));
  EXPECT_EQ(run("Constant", {}, attrs({{"value", t}})).dtype, DType::i32);
  EXPECT_EQ(run("Constant", {}, attrs({{"value_ints", I{1, 2, 3}}})).shape, (Shape{3}));
  const Value& f = run("Constant", {}, attrs({{"value_float", 1.5f}}));
  EXPECT_EQ(f.shape, (Shape{}));
  EXPECT_EQ(f.dtype, DType::f32);
  EXPECT_THAT(error_of("Constant", {}), HasSubstr("exactly one value attribute"));
}

TEST_F(ValidateTest, ConstantOfShapeRangeExpandTile) {
  const Value& c0 = run("ConstantOfShape", {ints("s", {2, 3})});
  EXPECT_EQ(c0.shape, (Shape{2, 3}));
  EXPECT_EQ(c0.dtype, DType::f32);
  EXPECT_EQ(run("ConstantOfShape", {ints("s2", {4})}, attrs({{"value", Tensor(DType::i64, {1})}})).dtype, DType::i64);

  const Value& r = run("Range", {scalar_i64("a", 1), scalar_i64("b", 10), scalar_i64("c", 3)});
  EXPECT_EQ(r.shape, (Shape{3}));
  EXPECT_EQ(r.dtype, DType::i64);
  EXPECT_EQ(shape_of("Range", {floats("fa", {0.f}, {}), floats("fb", {1.f}, {}), floats("fc", {0.3f}, {})}),
            (Shape{4}));
  EXPECT_EQ(shape_of("Range", {scalar_i64("d", 5), scalar_i64("e", 0), scalar_i64("f", 1)}), (Shape{0}));

  ValueId x = input("x", {3, 1});
  EXPECT_EQ(shape_of("Expand", {x, ints("es", {2, 1, 4})}), (Shape{2, 3, 4}));
  EXPECT_EQ(shape_of("Tile", {x, ints("tr", {2, 5})}), (Shape{6, 5}));
  EXPECT_THAT(error_of("Expand", {x, ints("es2", {2, 4})}), HasSubstr("cannot be expanded to [2, 4]"));
}

TEST_F(ValidateTest, ConstantFoldingStyleProgressiveValidation) {
  // Shape -> Gather -> Unsqueeze -> Concat -> Reshape, validated one node at a time as the folding
  // pass does, with each result turned into a constant before the next node is validated.
  ValueId x = input("x", {2, 3, 4});
  ValueId s = g.add_value("s"), r = g.add_value("r");
  g.add_node("Shape", "shape", {x}, {s});
  ValueId flat = ints("flat", {0, -1});
  g.add_node("Reshape", "reshape", {x, s}, {r});
  validate_node(g, g.nodes[0]);
  EXPECT_EQ(g.value(s).shape, (Shape{3}));
  try {
    validate_node(g, g.nodes[1]);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("Reshape's shape input must be constant after folding (got computed value 's')"));
  }
  g.nodes[1].inputs[1] = flat;
  validate_node(g, g.nodes[1]);
  EXPECT_EQ(g.value(r).shape, (Shape{2, 12}));
}

// Hostile sizes are refused by validation, before anything is allocated: element counts that
// overflow 64 bits (they would wrap into a small allocation the kernels then overrun) and tensors
// past the per-tensor cap; a model over the memory cap is refused at compile time with the figures.
TEST_F(ValidateTest, HugeTensorsAreRefusedBeforeAnyAllocation) {
  const int64_t big = int64_t{1} << 31;
  {
    Graph h;
    h.inputs = {h.add_value("x", DType::f32, {big, big}, true)};
    try {
      validate(h);
      FAIL() << "validated";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("graph input 'x': shape 2147483648x2147483648 (f32) needs"));
      EXPECT_THAT(e.what(), HasSubstr("64 TiB"));
    }
  }
  {
    Graph h;
    h.inputs = {h.add_value("x", DType::u8, {int64_t{1} << 40, int64_t{1} << 40}, true)};
    EXPECT_THROW(validate(h), Error);
    EXPECT_THAT(tensor_size_problem(DType::u8, {int64_t{1} << 40, int64_t{1} << 40}), HasSubstr("more elements than a 64-bit count"));
  }
  // A node whose inferred output overflows: Expand of a small input to 2^31 x 2^31 x 4.
  const ValueId x = input("x", {1, 1, 4});
  EXPECT_THAT(error_of("Expand", {x, ints("huge", {big, big, 4})}), HasSubstr("output 0: shape 2147483648x2147483648x4"));
  EXPECT_THAT(error_of("Expand", {x, ints("wrap", {big, big, big, big, 4})}), HasSubstr("more elements than a 64-bit count"));
  // Packed sub-byte tensors count bits: 2^49 int4 codes are 2^48 bytes, over the cap; 2^45 are fine.
  EXPECT_NE(tensor_size_problem(DType::i4, {int64_t{1} << 49}), "");
  EXPECT_EQ(tensor_size_problem(DType::i4, {int64_t{1} << 45}), "");
  EXPECT_EQ(shape_of("Expand", {x, ints("ok", {2, 3, 4})}), (Shape{2, 3, 4}));

  // The memory cap: a 1 x 64 x 1024 x 1024 input's Relu needs 512 MiB of arena.
  Graph m;
  const ValueId in = m.add_value("in", DType::f32, {1, 64, 1024, 1024}, true);
  const ValueId out = m.add_value("out");
  m.inputs = {in};
  m.add_node("Relu", "relu", {in}, {out});
  m.outputs = {out};
  validate(m);
  CompileOptions o;
  o.threads = 1;
  o.max_memory = parse_memory_size("256M");
  EXPECT_EQ(o.max_memory, 256 << 20);
  try {
    CompiledModel::compile(m, o);
    FAIL() << "compiled";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("need 512.0 MiB"));
    EXPECT_THAT(e.what(), HasSubstr("memory cap of 256.0 MiB (--max-memory)"));
  }
  EXPECT_EQ(parse_memory_size("16G"), int64_t{16} << 30);
  EXPECT_EQ(parse_memory_size("12Q"), -1);
  EXPECT_EQ(parse_memory_size(""), -1);
  EXPECT_GT(physical_memory_bytes(), int64_t{1} << 28);
}

}  // namespace
}  // namespace lowbit
