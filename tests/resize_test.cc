// Resize's fast rows against the reference kernel (which follows the ONNX coordinate formulas).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "lowbit/dispatch/registry.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/runtime/thread_pool.h"

namespace lowbit {
namespace {

struct RCase {
  Shape x, y;
  const char* ctm = "asymmetric";
  const char* mode = "nearest";
  const char* nearest = "floor";
  bool scales = true;  // else sizes
  bool fast = true;    // the whole-factor row applies
};

Graph build(const RCase& c) {
  Graph g;
  ValueId x = g.add_value("x", DType::f32, c.x, true);
  ValueId roi = g.add_constant("roi", Tensor(DType::f32, {0}));
  std::vector<ValueId> in{x, roi};
  if (c.scales) {
    Tensor s(DType::f32, {4});
    for (int i = 0; i < 4; ++i) s.data<float>()[i] = float(c.y[size_t(i)]) / float(c.x[size_t(i)]);
    in.push_back(g.add_constant("scales", s));
  } else {
    Tensor s(DType::i64, {4});
    for (int i = 0; i < 4; ++i) s.data<int64_t>()[i] = c.y[size_t(i)];
    in.push_back(kNoValue);
    in.push_back(g.add_constant("sizes", s));
  }
  ValueId y = g.add_value("y");
  Attributes a;
  a.set("mode", std::string(c.mode));
  a.set("coordinate_transformation_mode", std::string(c.ctm));
  a.set("nearest_mode", std::string(c.nearest));
  g.add_node("Resize", "resize", in, {y}, a);
  validate(g);
  return g;
}

TEST(Resize, FastRowsMatchTheReference) {
  const RCase cases[] = {
      {{1, 3, 5, 7}, {1, 3, 10, 14}},
      {{2, 5, 4, 3}, {2, 5, 16, 12}},
      {{1, 2, 3, 9}, {1, 2, 24, 72}, "asymmetric", "nearest", "floor", false},
      {{1, 4, 6, 5}, {1, 4, 12, 15}},  // 2 x 3
      {{1, 4, 6, 5}, {1, 4, 6, 10}},   // 1 x 2
      {{1, 7, 1, 1}, {1, 7, 2, 2}, "asymmetric", "nearest", "round_prefer_floor"},  // factor 2: same as floor
      {{1, 2, 3, 3}, {1, 2, 12, 12}, "asymmetric", "nearest", "round_prefer_floor", true, false},  // factor 4: not
      {{1, 2, 3, 3}, {1, 2, 6, 6}, "half_pixel", "nearest", "floor", true, false},
      {{1, 2, 3, 3}, {1, 2, 6, 6}, "asymmetric", "linear", "floor", true, false},
      {{1, 2, 4, 4}, {1, 2, 6, 6}, "asymmetric", "nearest", "floor", true, false},  // 1.5x
  };
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  int rows = 0;
  for (const KernelCandidate* kc : candidates_for("Resize")) {
    if (kc->name.starts_with("reference") || !kc->create) continue;
    ++rows;
    for (const RCase& c : cases) {
      Graph g = build(c);
      NodeContext ctx{g, g.nodes[0], host_target(), 2};
      const std::string why = kc->check(ctx);
      ASSERT_EQ(why.empty(), c.fast) << kc->name << " " << shape_str(c.x) << " -> " << shape_str(c.y) << ": " << why;
      if (!c.fast) continue;
      Tensor x(DType::f32, c.x), want(DType::f32, c.y), got(DType::f32, c.y);
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(rng);
      const Node& n = g.nodes[0];
      std::vector<TensorView> in;
      for (size_t i = 0; i < n.inputs.size(); ++i)
        in.push_back(i == 0 ? x.view() : n.inputs[i] == kNoValue ? TensorView{} : g.constant(n.inputs[i])->view());
      std::vector<TensorView> ref_out = {want.view()}, out = {got.view()};
      find_reference("Resize")(g, n, in, ref_out);
      ThreadPool pool(2);
      kc->create(ctx)->run(in, out, pool);
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), size_t(want.numel()) * 4), 0)
          << kc->name << " " << shape_str(c.x) << " -> " << shape_str(c.y);
    }
  }
  EXPECT_GE(rows, 1);
}

}  // namespace
}  // namespace lowbit
