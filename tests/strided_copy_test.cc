// Transpose and Slice as runs of contiguous copies against the reference kernels, byte for byte,
// over every dtype width they move (f32, u8 codes, i64), at 1 and 3 threads: channel shuffles
// (the 5-D Transpose of ShuffleNet), reversals, identity, slices with steps of 2 and -1, negative
// and clamped bounds, axes subsets, empty outputs. (Packed sub-byte codes never reach them: the
// schemas accept whole-byte dtypes only, and the rows refuse them again.)
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "lowbit/dispatch/registry.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/runtime/thread_pool.h"

namespace lowbit {
namespace {

Tensor ints(std::vector<int64_t> v) {
  Tensor t(DType::i64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

// Runs `row` and the reference on g's only node with a random input; expects the same bytes.
void expect_same_as_reference(const Graph& g, const std::string& row, const std::string& what) {
  const Node& n = g.nodes[0];
  const Value& xv = g.value(n.inputs[0]);
  Tensor x(xv.dtype, xv.shape);
  std::mt19937 rng(9);
  for (int64_t i = 0; i < x.nbytes(); ++i) static_cast<uint8_t*>(x.raw())[i] = static_cast<uint8_t>(rng());
  const Value& yv = g.value(n.outputs[0]);
  std::vector<TensorView> in;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    in.push_back(i == 0 ? x.view() : n.inputs[i] == kNoValue ? TensorView{} : g.constant(n.inputs[i])->view());
  Tensor want(yv.dtype, yv.shape);
  std::vector<TensorView> ref_out = {want.view()};
  find_reference(n.op)(g, n, in, ref_out);
  for (int threads : {1, 3}) {
    NodeContext ctx{g, n, host_target(), threads};
    const KernelCandidate* kc = find_candidate(row);
    ASSERT_NE(kc, nullptr);
    ASSERT_EQ(kc->check(ctx), "") << what;
    auto k = kc->create(ctx);
    ThreadPool pool(threads);
    Tensor got(yv.dtype, yv.shape);
    std::memset(got.raw(), 0xAB, static_cast<size_t>(got.nbytes()));
    std::vector<TensorView> out = {got.view()};
    k->run(in, out, pool);
    EXPECT_EQ(std::memcmp(want.raw(), got.raw(), static_cast<size_t>(want.nbytes())), 0)
        << what << " threads " << threads;
  }
}

TEST(StridedCopy, TransposeRunsMatchTheReference) {
  struct TCase {
    Shape x;
    std::vector<int64_t> perm;  // empty: reverse
  };
  const TCase cases[] = {
      {{1, 2, 58, 28, 28}, {0, 2, 1, 3, 4}},  // ShuffleNetV2's channel shuffle
      {{2, 3, 5, 7}, {0, 1, 3, 2}},           // last two swapped: element runs
      {{2, 3, 5, 7}, {}},                     // reverse
      {{2, 3, 5, 7}, {0, 1, 2, 3}},           // identity: one run
      {{4, 1, 6}, {1, 0, 2}},                 // unit dim
      {{3, 4, 5}, {2, 0, 1}},
      {{1, 1}, {1, 0}},
  };
  for (DType dt : {DType::f32, DType::u8, DType::i64})
    for (const TCase& c : cases) {
      Graph g;
      const ValueId x = g.add_value("x", dt, c.x, true);
      g.inputs = {x};
      Attributes a;
      if (!c.perm.empty()) a.set("perm", c.perm);
      const ValueId y = g.add_value("y");
      g.add_node("Transpose", "t", {x}, {y}, a);
      g.outputs = {y};
      validate(g);
      expect_same_as_reference(g, "x-transpose-runs", std::string(dtype_name(dt)) + " " + shape_str(c.x));
    }
}

TEST(StridedCopy, SliceRunsMatchTheReference) {
  struct SCase {
    Shape x;
    std::vector<int64_t> starts, ends, axes, steps;  // empty axes / steps: omitted inputs
  };
  const SCase cases[] = {
      {{1, 116, 28, 28}, {0}, {58}, {1}, {}},           // ShuffleNetV2's channel split, first half
      {{1, 116, 28, 28}, {58}, {116}, {1}, {}},         // second half
      {{2, 6, 5, 7}, {1, 0}, {5, 7}, {1, 3}, {2, 2}},   // steps of 2 on channels and columns
      {{2, 6, 5, 7}, {-1}, {-1000}, {2}, {-1}},         // reversed rows, clamped end
      {{2, 6, 5, 7}, {-3, 2}, {1000, -1}, {-1, 1}, {}}, // negative axis and bounds
      {{3, 4, 5}, {0, 0, 0}, {3, 4, 5}, {}, {}},        // everything: one run
      {{3, 4, 5}, {2}, {2}, {1}, {}},                   // empty
      {{10}, {1}, {9}, {0}, {3}},
  };
  for (DType dt : {DType::f32, DType::u8, DType::i64})
    for (const SCase& c : cases) {
      Graph g;
      const ValueId x = g.add_value("x", dt, c.x, true);
      g.inputs = {x};
      std::vector<ValueId> in = {x, g.add_constant("starts", ints(c.starts)), g.add_constant("ends", ints(c.ends))};
      if (!c.axes.empty() || !c.steps.empty())
        in.push_back(c.axes.empty() ? kNoValue : g.add_constant("axes", ints(c.axes)));
      if (!c.steps.empty()) in.push_back(g.add_constant("steps", ints(c.steps)));
      const ValueId y = g.add_value("y");
      g.add_node("Slice", "s", in, {y});
      g.outputs = {y};
      validate(g);
      expect_same_as_reference(g, "x-slice-runs", std::string(dtype_name(dt)) + " " + shape_str(c.x));
    }
}

}  // namespace
}  // namespace lowbit
