// Hand-computed cases for the reference kernels (the oracle everything else is tested against).
// Graphs are built with explicit value shapes so that these tests do not depend on validate().
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <numeric>
#include <random>

#include "lowbit/common/error.h"
#include "lowbit/kernels/reference/reference.h"

namespace lowbit {
namespace {

template <class T>
Tensor make(DType dt, Shape shape, const std::vector<T>& v) {
  Tensor t(dt, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
  std::copy(v.begin(), v.end(), t.data<T>());
  return t;
}
Tensor F(Shape s, const std::vector<float>& v) { return make<float>(DType::f32, std::move(s), v); }
Tensor I64(Shape s, const std::vector<int64_t>& v) { return make<int64_t>(DType::i64, std::move(s), v); }
Tensor I32(Shape s, const std::vector<int32_t>& v) { return make<int32_t>(DType::i32, std::move(s), v); }
Tensor B(Shape s, const std::vector<uint8_t>& v) { return make<uint8_t>(DType::boolean, std::move(s), v); }

Tensor random_f32(Shape s, uint32_t seed) {
  Tensor t(DType::f32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

struct OutSpec {
  DType dtype;
  Shape shape;
};

// Runs one node through evaluate_reference. Empty (default-constructed) input tensors are omitted
// optional inputs. Output shapes are given explicitly, as validate() would have inferred them.
std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& inputs, const std::vector<OutSpec>& outs,
                        Attributes attrs = {}) {
  Graph g;
  std::vector<ValueId> in_ids;
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) {
      in_ids.push_back(kNoValue);
      ptrs.push_back(nullptr);
    } else {
      in_ids.push_back(g.add_value("in" + std::to_string(i), inputs[i].dtype(), inputs[i].shape(), true));
      ptrs.push_back(&inputs[i]);
    }
  }
  std::vector<ValueId> out_ids;
  for (size_t i = 0; i < outs.size(); ++i)
    out_ids.push_back(g.add_value("out" + std::to_string(i), outs[i].dtype, outs[i].shape, true));
  g.add_node(op, "n", in_ids, out_ids, std::move(attrs));
  return evaluate_reference(g, g.nodes[0], ptrs);
}

Tensor run1(const std::string& op, const std::vector<Tensor>& inputs, OutSpec out, Attributes attrs = {}) {
  return run(op, inputs, {std::move(out)}, std::move(attrs))[0];
}

template <class T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

void expect_near(const Tensor& t, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.data<float>()[i], want[i], tol) << "at " << i;
}

void expect_same(const Tensor& a, const Tensor& b, float tol = 1e-4f) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], tol) << "at " << i;
}

Attributes attrs(std::initializer_list<std::pair<std::string, AttrValue>> kv) {
  Attributes a;
  for (auto& [k, v] : kv) a.set(k, v);
  return a;
}

std::vector<float> iota_f(int n, float start = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

// Independent direct convolution with bounds checks in the innermost loop.
Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor* b, int64_t group, std::vector<int64_t> s,
                  std::vector<int64_t> d, std::vector<int64_t> p) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t M = w.shape()[0], KH = w.shape()[2], KW = w.shape()[3];
  const int64_t OH = (H + p[0] + p[2] - ((KH - 1) * d[0] + 1)) / s[0] + 1;
  const int64_t OW = (W + p[1] + p[3] - ((KW - 1) * d[1] + 1)) / s[1] + 1;
  Tensor y(DType::f32, {N, M, OH, OW});
  const int64_t Cg = C / group, Mg = M / group;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b ? b->data<float>()[m] : 0.0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t ih = oh * s[0] - p[0] + kh * d[0], iw = ow * s[1] - p[1] + kw * d[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += x.data<float>()[((n * C + (m / Mg) * Cg + c) * H + ih) * W + iw] *
                       w.data<float>()[((m * Cg + c) * KH + kh) * KW + kw];
              }
          y.data<float>()[((n * M + m) * OH + oh) * OW + ow] = static_cast<float>(acc);
        }
  return y;
}

// ---------------------------------------------------------------- registry

TEST(Reference, RegistryCoversOps) {
  for (const char* op :
       {"Conv", "ConvTranspose", "BatchNormalization", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool",
        "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax", "Softmax", "Resize", "Pad", "Relu", "Clip",
        "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Exp", "Neg", "Abs", "Sqrt", "Identity", "Dropout",
        "Add", "Sub", "Mul", "Div", "Pow", "Min", "Max", "Equal", "Less", "Greater", "Where", "Cast", "Reshape",
        "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "Shape", "Gather", "Slice",
        "ConstantOfShape", "Constant", "Range", "Expand", "Tile"})
    EXPECT_NE(find_reference(op), nullptr) << op;
  EXPECT_EQ(find_reference("NoSuchOp"), nullptr);
}

TEST(Reference, EvaluateUnknownOpNamesNode) {
  Graph g;
  ValueId o = g.add_value("o", DType::f32, {1}, true);
  g.add_node("NoSuchOp", "weird", {}, {o});
  try {
    evaluate_reference(g, g.nodes[0], {});
    FAIL() << "expected lowbit::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'weird' (NoSuchOp)"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- conv family

TEST(Reference, ConvKnownAnswer) {
  Tensor x = F({1, 1, 3, 3}, iota_f(9));
  Tensor w = F({1, 1, 2, 2}, {1, 1, 1, 1});
  expect_near(run1("Conv", {x, w}, {DType::f32, {1, 1, 2, 2}}), {12, 16, 24, 28});
  // 3x3 box filter with pads 1: corners sum 4 elements, the centre all nine.
  Tensor w3 = F({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  Tensor b = F({1}, {0.5f});
  expect_near(run1("Conv", {x, w3, b}, {DType::f32, {1, 1, 3, 3}}, attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}})),
              {12.5f, 21.5f, 16.5f, 27.5f, 45.5f, 33.5f, 24.5f, 39.5f, 28.5f});
}

TEST(Reference, ConvStridesDilationAsymmetricPadsMatchNaive) {
  Tensor x = random_f32({2, 3, 9, 8}, 1);
  Tensor w = random_f32({4, 3, 3, 2}, 2);
  Tensor b = random_f32({4}, 3);
  std::vector<int64_t> s = {2, 1}, d = {1, 2}, p = {1, 0, 2, 3};
  Tensor want = naive_conv(x, w, &b, 1, s, d, p);
  Tensor got = run1("Conv", {x, w, b}, {DType::f32, want.shape()},
                    attrs({{"strides", s}, {"dilations", d}, {"pads", p}}));
  expect_same(got, want);
}

TEST(Reference, GroupedConvEqualsPerGroupConvs) {
  Tensor x = random_f32({1, 4, 5, 5}, 4);
  Tensor w = random_f32({6, 2, 3, 3}, 5);
  Tensor b = random_f32({6}, 6);
  Tensor y = run1("Conv", {x, w, b}, {DType::f32, {1, 6, 5, 5}},
                  attrs({{"group", int64_t{2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  for (int64_t gi = 0; gi < 2; ++gi) {
    // Slice the group's channels, weights and biases and run an ungrouped conv on them.
    Tensor xg(DType::f32, {1, 2, 5, 5}), wg(DType::f32, {3, 2, 3, 3}), bg(DType::f32, {3});
    std::copy_n(x.data<float>() + gi * 50, 50, xg.data<float>());
    std::copy_n(w.data<float>() + gi * 54, 54, wg.data<float>());
    std::copy_n(b.data<float>() + gi * 3, 3, bg.data<float>());
    Tensor yg = run1("Conv", {xg, wg, bg}, {DType::f32, {1, 3, 5, 5}}, attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
    for (int64_t i = 0; i < 75; ++i) EXPECT_NEAR(y.data<float>()[gi * 75 + i], yg.data<float>()[i], 1e-5f);
  }
}

TEST(Reference, DepthwiseConvMatchesNaive) {
  Tensor x = random_f32({1, 3, 7, 6}, 7);
  Tensor w = random_f32({3, 1, 3, 3}, 8);
  Tensor want = naive_conv(x, w, nullptr, 3, {2, 2}, {1, 1}, {1, 1, 1, 1});
  Tensor got = run1("Conv", {x, w}, {DType::f32, want.shape()},
                    attrs({{"group", int64_t{3}}, {"strides", std::vector<int64_t>{2, 2}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  expect_same(got, want);
}

TEST(Reference, ConvResidualAndClampFusionEqualsSeparateOps) {
  Tensor x = random_f32({1, 2, 4, 4}, 9);
  Tensor w = random_f32({3, 2, 3, 3}, 10);
  Tensor b = random_f32({3}, 11);
  Tensor r = random_f32({1, 3, 4, 4}, 12);
  for (float& v : std::span(r.data<float>(), 48)) v *= 4.0f;  // push some sums beyond [0, 1]
  const Shape ys = {1, 3, 4, 4};
  const auto pads = std::vector<int64_t>{1, 1, 1, 1};
  Tensor fused = run1("Conv", {x, w, b, r}, {DType::f32, ys},
                      attrs({{"pads", pads}, {"act_min", 0.0f}, {"act_max", 1.0f}}));
  Tensor conv = run1("Conv", {x, w, b}, {DType::f32, ys}, attrs({{"pads", pads}}));
  Tensor sum = run1("Add", {conv, r}, {DType::f32, ys});
  Tensor clipped = run1("Clip", {sum, F({}, {0.0f}), F({}, {1.0f})}, {DType::f32, ys});
  expect_same(fused, clipped, 1e-6f);
  // Relu as act_min = 0 only.
  Tensor relu_fused = run1("Conv", {x, w, b}, {DType::f32, ys}, attrs({{"pads", pads}, {"act_min", 0.0f}}));
  expect_same(relu_fused, run1("Relu", {conv}, {DType::f32, ys}), 1e-6f);
}

TEST(Reference, ConvTransposeKnownAnswer) {
  Tensor x = F({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = F({1, 1, 2, 2}, {1, 1, 1, 1});
  expect_near(run1("ConvTranspose", {x, w}, {DType::f32, {1, 1, 3, 3}}), {1, 3, 2, 4, 10, 6, 3, 7, 4});
  // Stride 2 places each input as a disjoint 2x2 block; output_padding adds a zero row/column.
  expect_near(run1("ConvTranspose", {x, w}, {DType::f32, {1, 1, 5, 5}},
                   attrs({{"strides", std::vector<int64_t>{2, 2}}, {"output_padding", std::vector<int64_t>{1, 1}}})),
              {1, 1, 2, 2, 0, 1, 1, 2, 2, 0, 3, 3, 4, 4, 0, 3, 3, 4, 4, 0, 0, 0, 0, 0, 0});
  // pads crop the full output.
  expect_near(run1("ConvTranspose", {x, w}, {DType::f32, {1, 1, 1, 1}},
                   attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}})),
              {10});
}

TEST(Reference, ConvTransposeGroupsEqualPerGroup) {
  Tensor x = random_f32({1, 4, 3, 3}, 13);
  Tensor w = random_f32({4, 2, 3, 3}, 14);  // [C, M/group, kh, kw], group 2 -> M = 4
  Tensor y = run1("ConvTranspose", {x, w}, {DType::f32, {1, 4, 7, 7}},
                  attrs({{"group", int64_t{2}}, {"strides", std::vector<int64_t>{2, 2}}}));
  for (int64_t gi = 0; gi < 2; ++gi) {
    Tensor xg(DType::f32, {1, 2, 3, 3}), wg(DType::f32, {2, 2, 3, 3});
    std::copy_n(x.data<float>() + gi * 18, 18, xg.data<float>());
    std::copy_n(w.data<float>() + gi * 36, 36, wg.data<float>());
    Tensor yg = run1("ConvTranspose", {xg, wg}, {DType::f32, {1, 2, 7, 7}}, attrs({{"strides", std::vector<int64_t>{2, 2}}}));
    for (int64_t i = 0; i < 98; ++i) EXPECT_NEAR(y.data<float>()[gi * 98 + i], yg.data<float>()[i], 1e-5f);
  }
}

TEST(Reference, BatchNormalization) {
  Tensor x = F({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor y = run1("BatchNormalization",
                  {x, F({2}, {1, 2}), F({2}, {0, 1}), F({2}, {1, 3}), F({2}, {4, 0.25f})},
                  {DType::f32, {1, 2, 1, 2}}, attrs({{"epsilon", 0.0f}}));
  expect_near(y, {0.0f, 0.5f, 1.0f, 5.0f});
}

TEST(Reference, GemmAttributesAndBroadcastBias) {
  Tensor a = F({3, 2}, {1, 2, 3, 4, 5, 6});  // transA: A' = [[1,3,5],[2,4,6]]
  Tensor b = F({2, 3}, {1, 0, 1, 0, 1, 1});  // transB: B' = [[1,0],[0,1],[1,1]]
  Tensor c = F({2}, {10, 20});
  Tensor y = run1("Gemm", {a, b, c}, {DType::f32, {2, 2}},
                  attrs({{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 2.0f}, {"beta", 0.5f}}));
  // A'B' = [[6, 8], [8, 10]]
  expect_near(y, {17, 26, 21, 30});
  Tensor clamped = run1("Gemm", {a, b, c}, {DType::f32, {2, 2}},
                        attrs({{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"act_max", 25.0f}}));
  expect_near(clamped, {16, 25, 18, 25});
  Tensor nobias = run1("Gemm", {F({1, 2}, {1, 2}), F({2, 1}, {3, 4})}, {DType::f32, {1, 1}});
  expect_near(nobias, {11});
}

TEST(Reference, MatMulBatchBroadcastAndVectors) {
  Tensor a = F({2, 1, 2, 3}, iota_f(12));
  Tensor b = F({3, 3, 2}, iota_f(18));
  Tensor y = run1("MatMul", {a, b}, {DType::f32, {2, 3, 2, 2}});
  // Spot checks: batch (1, 2) uses a[1] and b[2].
  const float* A = a.data<float>() + 6;
  const float* B = b.data<float>() + 12;
  const float* Y = y.data<float>() + (1 * 3 + 2) * 4;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      float s = 0;
      for (int k = 0; k < 3; ++k) s += A[i * 3 + k] * B[k * 2 + j];
      EXPECT_NEAR(Y[i * 2 + j], s, 1e-4f);
    }
  expect_near(run1("MatMul", {F({3}, {1, 2, 3}), F({3}, {4, 5, 6})}, {DType::f32, {}}), {32});
  expect_near(run1("MatMul", {F({2, 3}, iota_f(6)), F({3}, {1, 0, 1})}, {DType::f32, {2}}), {4, 10});
}

// ---------------------------------------------------------------- pooling / reductions

TEST(Reference, MaxPoolCeilMode) {
  Tensor x = F({1, 1, 4, 4}, iota_f(16));
  auto a = attrs({{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
                  {"ceil_mode", int64_t{1}}});
  expect_near(run1("MaxPool", {x}, {DType::f32, {1, 1, 2, 2}}, a), {11, 12, 15, 16});
  Tensor avg = run1("AveragePool", {x}, {DType::f32, {1, 1, 2, 2}}, a);
  expect_near(avg, {6, 7.5f, 12, 13.5f});  // clipped windows average only what they cover
}

TEST(Reference, MaxPoolPadsAndU8) {
  Tensor x = make<uint8_t>(DType::u8, {1, 1, 2, 3}, {1, 9, 3, 4, 2, 6});
  auto a = attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{0, 0, 0, 1}}});
  Tensor y = run1("MaxPool", {x}, {DType::u8, {1, 1, 1, 3}}, a);
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{9, 9, 6}));
}

TEST(Reference, AveragePoolCountIncludePad) {
  Tensor x = F({1, 1, 2, 2}, {1, 2, 3, 4});
  auto a = attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  expect_near(run1("AveragePool", {x}, {DType::f32, {1, 1, 3, 3}}, a), {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4});
  a.set("count_include_pad", int64_t{1});
  expect_near(run1("AveragePool", {x}, {DType::f32, {1, 1, 3, 3}}, a),
              {0.25f, 0.75f, 0.5f, 1.0f, 2.5f, 1.5f, 0.75f, 1.75f, 1.0f});
}

TEST(Reference, GlobalPools) {
  Tensor x = F({1, 2, 2, 2}, {1, 2, 3, 4, -1, -2, -3, -8});
  expect_near(run1("GlobalAveragePool", {x}, {DType::f32, {1, 2, 1, 1}}), {2.5f, -3.5f});
  expect_near(run1("GlobalMaxPool", {x}, {DType::f32, {1, 2, 1, 1}}), {4, -1});
}

TEST(Reference, Reductions) {
  Tensor x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_near(run1("ReduceMean", {x}, {DType::f32, {2, 1}}, attrs({{"axes", std::vector<int64_t>{-1}}})), {2, 5});
  expect_near(run1("ReduceMean", {x}, {DType::f32, {3}},
                   attrs({{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}})),
              {2.5f, 3.5f, 4.5f});
  expect_near(run1("ReduceMean", {x}, {DType::f32, {1, 1}}), {3.5f});
  expect_near(run1("ReduceSum", {x, I64({1}, {1})}, {DType::f32, {2, 1}}), {6, 15});  // axes as input
  expect_near(run1("ReduceMax", {x}, {DType::f32, {1, 3}}, attrs({{"axes", std::vector<int64_t>{0}}})), {4, 5, 6});
}

TEST(Reference, SoftmaxRowsSumToOne) {
  Tensor x = random_f32({2, 3, 4}, 15);
  for (int64_t axis : {0, 1, 2, -1}) {
    Tensor y = run1("Softmax", {x}, {DType::f32, x.shape()}, attrs({{"axis", axis}}));
    const int64_t a = axis < 0 ? axis + 3 : axis;
    const Shape& s = x.shape();
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < a; ++i) outer *= s[static_cast<size_t>(i)];
    for (int64_t i = a + 1; i < 3; ++i) inner *= s[static_cast<size_t>(i)];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        float sum = 0;
        for (int64_t k = 0; k < s[static_cast<size_t>(a)]; ++k) sum += y.data<float>()[(o * s[static_cast<size_t>(a)] + k) * inner + i];
        EXPECT_NEAR(sum, 1.0f, 1e-5f);
      }
  }
  // Known values; large inputs must not overflow.
  expect_near(run1("Softmax", {F({1, 3}, {1000, 1000, 1000 + std::log(2.0f)})}, {DType::f32, {1, 3}}),
              {0.25f, 0.25f, 0.5f}, 1e-4f);
  // coerce_2d (opset < 13): normalises over the flattened trailing axes.
  Tensor c = run1("Softmax", {x}, {DType::f32, x.shape()}, attrs({{"axis", int64_t{1}}, {"coerce_2d", int64_t{1}}}));
  for (int64_t o = 0; o < 2; ++o) {
    float sum = 0;
    for (int64_t k = 0; k < 12; ++k) sum += c.data<float>()[o * 12 + k];
    EXPECT_NEAR(sum, 1.0f, 1e-5f);
  }
}

// ---------------------------------------------------------------- Resize

TEST(Reference, ResizeNearest) {
  Tensor x = F({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = F({4}, {1, 1, 2, 2});
  Tensor y = run1("Resize", {x, Tensor(), scales}, {DType::f32, {1, 1, 4, 4}},
                  attrs({{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("asymmetric")},
                         {"nearest_mode", std::string("floor")}}));
  expect_near(y, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // Default (half_pixel, round_prefer_floor) gives the same picture for 2x upsampling.
  expect_near(run1("Resize", {x, Tensor(), scales}, {DType::f32, {1, 1, 4, 4}}), values<float>(y));
  // sizes instead of scales: 2x2 -> 1x3 with round_prefer_ceil / asymmetric.
  Tensor sizes = I64({4}, {1, 1, 1, 3});
  Tensor z = run1("Resize", {x, Tensor(), Tensor(), sizes}, {DType::f32, {1, 1, 1, 3}},
                  attrs({{"coordinate_transformation_mode", std::string("asymmetric")},
                         {"nearest_mode", std::string("round_prefer_ceil")}}));
  expect_near(z, {1, 2, 2});  // x = 0, 0.667, 1.333 -> 0, 1, 1
}

TEST(Reference, ResizeLinear) {
  Tensor x = F({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = F({4}, {1, 1, 2, 2});
  Tensor y = run1("Resize", {x, Tensor(), scales}, {DType::f32, {1, 1, 4, 4}}, attrs({{"mode", std::string("linear")}}));
  expect_near(y, {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
  Tensor ac = run1("Resize", {x, Tensor(), scales}, {DType::f32, {1, 1, 4, 4}},
                   attrs({{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("align_corners")}}));
  const float t = 1.0f / 3, u = 2.0f / 3;
  expect_near(ac, {1, 1 + t, 1 + u, 2, 1 + 2 * t, 1 + 3 * t, 1 + 4 * t, 2 + 2 * t, 1 + 4 * t, 1 + 5 * t, 1 + 6 * t,
                   2 + 4 * t, 3, 3 + t, 3 + u, 4},
              1e-5f);
}

// ---------------------------------------------------------------- Pad

TEST(Reference, PadModes) {
  Tensor x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor pads = I64({4}, {0, 2, 1, 1});
  expect_near(run1("Pad", {x, pads, F({}, {9})}, {DType::f32, {3, 6}}),
              {9, 9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9, 9, 9, 9, 9, 9, 9});
  expect_near(run1("Pad", {x, pads}, {DType::f32, {3, 6}}, attrs({{"mode", std::string("reflect")}})),
              {3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2});
  expect_near(run1("Pad", {x, pads}, {DType::f32, {3, 6}}, attrs({{"mode", std::string("edge")}})),
              {1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6, 4, 4, 4, 5, 6, 6});
  // Negative pads crop.
  expect_near(run1("Pad", {x, I64({4}, {0, -1, -1, 1})}, {DType::f32, {1, 3}}), {2, 3, 0});
  // i64 data, rank 1.
  Tensor yi = run1("Pad", {I64({2}, {7, 8}), I64({2}, {1, 0}), I64({}, {-1})}, {DType::i64, {3}});
  EXPECT_EQ(values<int64_t>(yi), (std::vector<int64_t>{-1, 7, 8}));
}

// ---------------------------------------------------------------- element-wise

TEST(Reference, Activations) {
  Tensor x = F({6}, {-3, -1, -0.5f, 0, 1, 4});
  expect_near(run1("Relu", {x}, {DType::f32, {6}}), {0, 0, 0, 0, 1, 4});
  expect_near(run1("LeakyRelu", {x}, {DType::f32, {6}}, attrs({{"alpha", 0.1f}})), {-0.3f, -0.1f, -0.05f, 0, 1, 4});
  expect_near(run1("HardSigmoid", {x}, {DType::f32, {6}}), {0, 0.3f, 0.4f, 0.5f, 0.7f, 1});
  expect_near(run1("HardSwish", {x}, {DType::f32, {6}}), {0, -1.0f / 3, -0.5f * 2.5f / 6, 0, 4.0f / 6, 4});
  expect_near(run1("Sigmoid", {F({1}, {0})}, {DType::f32, {1}}), {0.5f});
  expect_near(run1("Clip", {x, F({}, {-1}), Tensor()}, {DType::f32, {6}}), {-1, -1, -0.5f, 0, 1, 4});
  expect_near(run1("Clip", {x, Tensor(), F({}, {0.5f})}, {DType::f32, {6}}), {-3, -1, -0.5f, 0, 0.5f, 0.5f});
  expect_near(run1("Neg", {x}, {DType::f32, {6}}), {3, 1, 0.5f, 0, -1, -4});
  EXPECT_EQ(values<int64_t>(run1("Abs", {I64({2}, {-5, 3})}, {DType::i64, {2}})), (std::vector<int64_t>{5, 3}));
  Tensor d = run("Dropout", {x}, {{DType::f32, {6}}, {DType::boolean, {6}}})[1];
  EXPECT_EQ(values<uint8_t>(d), std::vector<uint8_t>(6, 1));
}

TEST(Reference, BroadcastAdd) {
  Tensor a = F({2, 3, 1}, {1, 2, 3, 4, 5, 6});
  Tensor b = F({1, 4}, {10, 20, 30, 40});
  Tensor y = run1("Add", {a, b}, {DType::f32, {2, 3, 4}});
  std::vector<float> want;
  for (float av : {1, 2, 3, 4, 5, 6})
    for (float bv : {10, 20, 30, 40}) want.push_back(av + bv);
  expect_near(y, want);
  // Scalar operand, and both operands broadcasting.
  expect_near(run1("Mul", {F({}, {2}), F({3}, {1, 2, 3})}, {DType::f32, {3}}), {2, 4, 6});
  expect_near(run1("Sub", {F({2, 1}, {10, 20}), F({1, 2}, {1, 2})}, {DType::f32, {2, 2}}), {9, 8, 19, 18});
}

TEST(Reference, IntegerArithmetic) {
  Tensor a = I64({4}, {7, -7, 7, -7});
  Tensor b = I64({4}, {2, 2, -2, -2});
  EXPECT_EQ(values<int64_t>(run1("Div", {a, b}, {DType::i64, {4}})), (std::vector<int64_t>{3, -3, -3, 3}));
  EXPECT_EQ(values<int32_t>(run1("Mul", {I32({2}, {3, -4}), I32({1}, {5})}, {DType::i32, {2}})),
            (std::vector<int32_t>{15, -20}));
  EXPECT_EQ(values<int64_t>(run1("Max", {a, b, I64({}, {0})}, {DType::i64, {4}})), (std::vector<int64_t>{7, 2, 7, 0}));
  EXPECT_EQ(values<int64_t>(run1("Min", {a, b}, {DType::i64, {4}})), (std::vector<int64_t>{2, -7, -2, -7}));
  expect_near(run1("Pow", {F({3}, {2, 3, 4}), I64({1}, {2})}, {DType::f32, {3}}), {4, 9, 16});
  expect_near(run1("Div", {F({2}, {1, -3}), F({2}, {4, 2})}, {DType::f32, {2}}), {0.25f, -1.5f});
}

TEST(Reference, ComparisonsAndWhere) {
  Tensor a = F({3}, {1, 2, 3});
  Tensor b = F({1}, {2});
  EXPECT_EQ(values<uint8_t>(run1("Equal", {a, b}, {DType::boolean, {3}})), (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_EQ(values<uint8_t>(run1("Less", {a, b}, {DType::boolean, {3}})), (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(values<uint8_t>(run1("Greater", {a, b}, {DType::boolean, {3}})), (std::vector<uint8_t>{0, 0, 1}));
  EXPECT_EQ(values<uint8_t>(run1("Equal", {I64({2}, {4, 5}), I64({2}, {4, 4})}, {DType::boolean, {2}})),
            (std::vector<uint8_t>{1, 0}));
  Tensor c = B({2, 1}, {1, 0});
  Tensor y = run1("Where", {c, I64({3}, {1, 2, 3}), I64({1}, {-1})}, {DType::i64, {2, 3}});
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
}

TEST(Reference, Cast) {
  Tensor x = F({5}, {-2.7f, -0.5f, 0.0f, 1.9f, 3.0f});
  EXPECT_EQ(values<int64_t>(run1("Cast", {x}, {DType::i64, {5}})), (std::vector<int64_t>{-2, 0, 0, 1, 3}));
  EXPECT_EQ(values<int32_t>(run1("Cast", {x}, {DType::i32, {5}})), (std::vector<int32_t>{-2, 0, 0, 1, 3}));
  EXPECT_EQ(values<uint8_t>(run1("Cast", {x}, {DType::boolean, {5}})), (std::vector<uint8_t>{1, 1, 0, 1, 1}));
  EXPECT_EQ(values<int8_t>(run1("Cast", {I64({2}, {-3, 100})}, {DType::i8, {2}})), (std::vector<int8_t>{-3, 100}));
  expect_near(run1("Cast", {B({2}, {1, 0})}, {DType::f32, {2}}), {1, 0});
  expect_near(run1("Cast", {I32({2}, {-4, 7})}, {DType::f32, {2}}), {-4, 7});
}

// ---------------------------------------------------------------- data movement

TEST(Reference, ReshapeLikeOpsCopy) {
  Tensor x = I32({2, 3}, {1, 2, 3, 4, 5, 6});
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
    EXPECT_EQ(values<int32_t>(run1(op, {x}, {DType::i32, {3, 2}})), values<int32_t>(x)) << op;
}

TEST(Reference, Transpose) {
  Tensor x = F({2, 3, 4}, iota_f(24, 0));
  Tensor y = run1("Transpose", {x}, {DType::f32, {4, 2, 3}}, attrs({{"perm", std::vector<int64_t>{2, 0, 1}}}));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k)
        EXPECT_EQ(y.data<float>()[(i * 2 + j) * 3 + k], x.data<float>()[(j * 3 + k) * 4 + i]);
  Tensor r = run1("Transpose", {B({2, 2}, {1, 0, 0, 0})}, {DType::boolean, {2, 2}});  // default: reversed axes
  EXPECT_EQ(values<uint8_t>(r), (std::vector<uint8_t>{1, 0, 0, 0}));
  Tensor r2 = run1("Transpose", {I64({1, 2}, {5, 6})}, {DType::i64, {2, 1}});
  EXPECT_EQ(values<int64_t>(r2), (std::vector<int64_t>{5, 6}));
}

TEST(Reference, ConcatAndSplit) {
  Tensor a = F({2, 1}, {1, 2});
  Tensor b = F({2, 2}, {3, 4, 5, 6});
  Tensor c = run1("Concat", {a, b}, {DType::f32, {2, 3}}, attrs({{"axis", int64_t{-1}}}));
  expect_near(c, {1, 3, 4, 2, 5, 6});
  auto parts = run("Split", {c, I64({2}, {2, 1})}, {{DType::f32, {2, 2}}, {DType::f32, {2, 1}}},
                   attrs({{"axis", int64_t{1}}}));
  expect_near(parts[0], {1, 3, 2, 5});
  expect_near(parts[1], {4, 6});
  Tensor i = run1("Concat", {I64({1}, {1}), I64({2}, {2, 3})}, {DType::i64, {3}}, attrs({{"axis", int64_t{0}}}));
  EXPECT_EQ(values<int64_t>(i), (std::vector<int64_t>{1, 2, 3}));
}

TEST(Reference, ShapeWithStartEnd) {
  Tensor x(DType::f32, {2, 3, 4, 5});
  EXPECT_EQ(values<int64_t>(run1("Shape", {x}, {DType::i64, {4}})), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(values<int64_t>(run1("Shape", {x}, {DType::i64, {2}},
                                 attrs({{"start", int64_t{1}}, {"end", int64_t{-1}}}))),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values<int64_t>(run1("Shape", {x}, {DType::i64, {1}}, attrs({{"start", int64_t{-10}}, {"end", int64_t{1}}}))),
            (std::vector<int64_t>{2}));
}

TEST(Reference, GatherNegativeIndex) {
  Tensor x = F({3, 2}, {1, 2, 3, 4, 5, 6});
  expect_near(run1("Gather", {x, I64({2}, {-1, 0})}, {DType::f32, {2, 2}}), {5, 6, 1, 2});
  expect_near(run1("Gather", {x, I32({2, 1}, {1, -2})}, {DType::f32, {3, 2, 1}}, attrs({{"axis", int64_t{1}}})),
              {2, 1, 4, 3, 6, 5});
  // Scalar index on a shape vector (the Shape -> Gather idiom).
  Tensor s = run1("Gather", {I64({4}, {1, 3, 224, 224}), I64({}, {-3})}, {DType::i64, {}});
  EXPECT_EQ(values<int64_t>(s), (std::vector<int64_t>{3}));
  EXPECT_THROW(run1("Gather", {x, I64({1}, {3})}, {DType::f32, {1, 2}}), Error);
}

TEST(Reference, SliceNegativeStepAndClamping) {
  Tensor x = F({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  // Reverse axis 1 entirely: start -1, end "minus infinity".
  Tensor y = run1("Slice", {x, I64({1}, {-1}), I64({1}, {INT64_MIN}), I64({1}, {1}), I64({1}, {-1})},
                  {DType::f32, {2, 4}});
  expect_near(y, {4, 3, 2, 1, 8, 7, 6, 5});
  Tensor z = run1("Slice", {x, I64({2}, {1, 3}), I64({2}, {0, 0}), I64({2}, {0, 1}), I64({2}, {-1, -2})},
                  {DType::f32, {1, 2}});
  expect_near(z, {8, 6});
  // Out-of-range ends clamp; default axes and steps.
  Tensor w = run1("Slice", {x, I64({2}, {0, 1}), I64({2}, {100, 1000})}, {DType::f32, {2, 3}});
  expect_near(w, {2, 3, 4, 6, 7, 8});
  Tensor v = run1("Slice", {I32({5}, {0, 1, 2, 3, 4}), I32({1}, {1}), I32({1}, {5}), Tensor(), I32({1}, {2})},
                  {DType::i32, {2}});
  EXPECT_EQ(values<int32_t>(v), (std::vector<int32_t>{1, 3}));
}

TEST(Reference, ExpandTileRange) {
  Tensor e = run1("Expand", {F({3, 1}, {1, 2, 3}), I64({3}, {2, 1, 2})}, {DType::f32, {2, 3, 2}});
  expect_near(e, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  Tensor t = run1("Tile", {I64({2, 2}, {1, 2, 3, 4}), I64({2}, {1, 2})}, {DType::i64, {2, 4}});
  EXPECT_EQ(values<int64_t>(t), (std::vector<int64_t>{1, 2, 1, 2, 3, 4, 3, 4}));
  expect_near(run1("Range", {F({}, {1}), F({}, {2}), F({}, {0.25f})}, {DType::f32, {4}}), {1, 1.25f, 1.5f, 1.75f});
  EXPECT_EQ(values<int32_t>(run1("Range", {I32({}, {10}), I32({}, {4}), I32({}, {-3})}, {DType::i32, {2}})),
            (std::vector<int32_t>{10, 7}));
}

TEST(Reference, ConstantOfShapeAndConstant) {
  Tensor z = run1("ConstantOfShape", {I64({2}, {2, 2})}, {DType::f32, {2, 2}});
  expect_near(z, {0, 0, 0, 0});
  Tensor seven = run1("ConstantOfShape", {I64({1}, {3})}, {DType::i64, {3}}, attrs({{"value", I64({1}, {7})}}));
  EXPECT_EQ(values<int64_t>(seven), (std::vector<int64_t>{7, 7, 7}));
  Tensor c = run1("Constant", {}, {DType::f32, {2}}, attrs({{"value", F({2}, {1.5f, 2.5f})}}));
  expect_near(c, {1.5f, 2.5f});
  Tensor ci = run1("Constant", {}, {DType::i64, {2}}, attrs({{"value_ints", std::vector<int64_t>{4, 5}}}));
  EXPECT_EQ(values<int64_t>(ci), (std::vector<int64_t>{4, 5}));
}

}  // namespace
}  // namespace lowbit
