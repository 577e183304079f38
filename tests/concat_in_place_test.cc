// Concat without copies (passes/concat_in_place.cc): a DenseNet-style block, where every Concat
// repeats all the block's features so far, runs with every Concat in place, its layers' outputs
// written once into one buffer, and gives the same bits as the graph run with copying Concats;
// Concats whose inputs cannot be placed are refused with a reason and copy; an artifact-style
// graph that claims an impossible placement is refused at compile time, naming the node.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "lowbit/common/error.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/passes/passes.h"
#include "lowbit/runtime/compiled_model.h"

namespace lowbit {
namespace {

Tensor random_tensor(DType dt, Shape s, uint32_t seed) {
  Tensor t(dt, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  if (dt == DType::f32)
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  else
    for (int64_t i = 0; i < t.nbytes(); ++i) static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t>(rng());
  return t;
}

ValueId conv(Graph& g, const std::string& name, ValueId x, int64_t cin, int64_t cout, int64_t k, uint32_t seed) {
  const ValueId w = g.add_constant(name + ".w", random_tensor(DType::f32, {cout, cin, k, k}, seed));
  const ValueId b = g.add_constant(name + ".b", random_tensor(DType::f32, {cout}, seed + 1));
  const ValueId y = g.add_value(name + ".y");
  Attributes a;
  a.set("pads", std::vector<int64_t>(4, k / 2));
  g.add_node("Conv", name, {x, w, b}, {y}, a);
  return y;
}

ValueId unary(Graph& g, const std::string& op, const std::string& name, ValueId x) {
  const ValueId y = g.add_value(name + ".y");
  g.add_node(op, name, {x}, {y});
  return y;
}

ValueId concat(Graph& g, const std::string& name, std::vector<ValueId> xs, int64_t axis = 1) {
  const ValueId y = g.add_value(name + ".y");
  Attributes a;
  a.set("axis", axis);
  g.add_node("Concat", name, std::move(xs), {y}, a);
  return y;
}

// A dense block: stem, then 4 layers each reading Relu(Concat(all features so far)), then a 1x1
// over the block's final Concat. `hw` sets the map size (and so each slice's byte alignment).
Graph dense_block(int64_t hw) {
  Graph g;
  const ValueId x = g.add_value("x", DType::f32, {1, 3, hw, hw}, true);
  g.inputs = {x};
  std::vector<ValueId> feats = {conv(g, "stem", x, 3, 16, 3, 1)};
  int64_t channels = 16;
  for (int l = 0; l < 4; ++l) {
    const std::string p = "layer" + std::to_string(l);
    const ValueId cat = feats.size() == 1 ? feats[0] : concat(g, p + ".cat", feats);
    const ValueId act = unary(g, "Relu", p + ".relu", cat);
    feats.push_back(conv(g, p + ".conv", act, channels, 8, 3, 10 + static_cast<uint32_t>(l) * 2));
    channels += 8;
  }
  const ValueId out = conv(g, "head", concat(g, "final.cat", feats), channels, 4, 1, 99);
  g.outputs = {out};
  validate(g);
  return g;
}

const Step* step_of(const CompiledModel& m, const std::string& node) {
  for (const Step& s : m.steps())
    if (m.graph().nodes[static_cast<size_t>(s.node)].name == node) return &s;
  return nullptr;
}

TEST(ConcatInPlace, DenseBlockRunsWithoutCopiesAndGivesTheSameBits) {
  for (int threads : {1, 2}) {
    CompileOptions fast;
    fast.threads = threads;
    auto m = CompiledModel::compile(dense_block(8), fast);  // 8 x 8 floats: 256-byte channel slices
    // Every Concat in place; each layer's output sits in the final Concat's buffer at its channel.
    const Step* final_cat = step_of(*m, "final.cat");
    ASSERT_NE(final_cat, nullptr);
    const ValueId cat_out = m->graph().nodes[static_cast<size_t>(final_cat->node)].outputs[0];
    ASSERT_GE(m->arena_offset(cat_out), 0);
    int concats = 0;
    for (const Step& s : m->steps()) {
      const Node& n = m->graph().nodes[static_cast<size_t>(s.node)];
      if (n.op != "Concat") continue;
      ++concats;
      EXPECT_EQ(s.choice.chosen->name, "x-concat-in-place") << n.name;
      // Its output starts where the block's buffer starts (the stem's features come first).
      EXPECT_EQ(m->arena_offset(n.outputs[0]), m->arena_offset(cat_out)) << n.name;
    }
    EXPECT_EQ(concats, 4);
    for (int l = 0; l < 4; ++l) {
      const Step* c = step_of(*m, "layer" + std::to_string(l) + ".conv");
      ASSERT_NE(c, nullptr);
      EXPECT_EQ(m->arena_offset(m->graph().nodes[static_cast<size_t>(c->node)].outputs[0]) - m->arena_offset(cat_out),
                (16 + 8 * l) * 64 * 4)
          << l;
    }

    // The same graph with copying Concats (no passes: the Relus run as nodes, which clamp the same
    // bits the fused epilogue does).
    CompileOptions copying = fast;
    copying.optimize = false;
    auto ref = CompiledModel::compile(dense_block(8), copying);
    for (const Step& s : ref->steps()) {
      if (ref->graph().nodes[static_cast<size_t>(s.node)].op == "Concat") {
        EXPECT_NE(s.choice.chosen->name, "x-concat-in-place");
      }
    }
    for (uint32_t seed : {5u, 6u}) {
      const Tensor x = random_tensor(DType::f32, {1, 3, 8, 8}, seed);
      const Tensor want = ref->run({x})[0], got = m->run({x})[0];
      ASSERT_EQ(want.nbytes(), got.nbytes());
      EXPECT_EQ(std::memcmp(want.raw(), got.raw(), static_cast<size_t>(want.nbytes())), 0)
          << "threads " << threads << " seed " << seed;
    }
  }
}

TEST(ConcatInPlace, UnalignedSlicesCopy) {
  // 5 x 5 floats: the stem's 16 channels are 1600 bytes (25 x 64), a layer's 8 are 800: the first
  // Concat [stem, f0] is placed, every later one would put f1 at byte 2400 and copies instead, into
  // a buffer of its own, reading f0 where the first one placed it.
  CompileOptions o;
  o.threads = 1;
  auto m = CompiledModel::compile(dense_block(5), o);
  for (const Step& s : m->steps()) {
    const Node& n = m->graph().nodes[static_cast<size_t>(s.node)];
    if (n.op != "Concat") continue;
    if (n.name == "layer1.cat") {
      EXPECT_EQ(s.choice.chosen->name, "x-concat-in-place");
      continue;
    }
    EXPECT_NE(s.choice.chosen->name, "x-concat-in-place") << n.name;
    bool explained = false;
    for (const Rejection& r : s.choice.rejected)
      if (r.candidate->name == "x-concat-in-place") explained = r.reason.find("not placed") != std::string::npos;
    EXPECT_TRUE(explained) << n.name;
  }
  CompileOptions copying = o;
  copying.optimize = false;
  auto ref = CompiledModel::compile(dense_block(5), copying);
  const Tensor x = random_tensor(DType::f32, {1, 3, 5, 5}, 3);
  const Tensor want = ref->run({x})[0], got = m->run({x})[0];
  EXPECT_EQ(std::memcmp(want.raw(), got.raw(), static_cast<size_t>(want.nbytes())), 0);
}

// Concats that must copy, each next to one that may not.
TEST(ConcatInPlace, RefusesWhatCannotShareABuffer) {
  struct Case {
    std::string what;
    Shape shape;
    DType dtype;
    int64_t axis;
    bool from_input;  // the concat reads the graph input directly
    bool twice;       // concat(a, a)
  };
  const Case cases[] = {
      {"batch 2: inputs are strided in the output", {2, 16, 4, 4}, DType::f32, 1, false, false},
      {"graph input", {1, 16, 4, 4}, DType::f32, 1, true, false},
      {"same value twice", {1, 16, 4, 4}, DType::f32, 1, false, true},
      {"u8 slices of 75 bytes", {1, 3, 5, 5}, DType::u8, 1, false, false},
      {"width concat of rows", {1, 1, 4, 16}, DType::f32, 3, false, false},
  };
  for (const Case& c : cases) {
    Graph g;
    const ValueId x = g.add_value("x", c.dtype, c.shape, true);
    g.inputs = {x};
    const ValueId a = c.from_input ? x : unary(g, "Identity", "a", x);
    const ValueId b = c.twice ? a : unary(g, "Identity", "b", x);
    const ValueId y = concat(g, "cat", {a, b}, c.axis);
    g.outputs = {y};
    validate(g);
    EXPECT_EQ(mark_concats_in_place(g), 0) << c.what;
  }
  // Concats that chain into one buffer, and two that cannot join it.
  Graph g;
  const ValueId x = g.add_value("x", DType::f32, {1, 16, 4, 4}, true);
  g.inputs = {x};
  const ValueId a = unary(g, "Relu", "a", x), b = unary(g, "Sigmoid", "b", x), c = unary(g, "Tanh", "c", x),
                d = unary(g, "Exp", "d", x);
  g.outputs = {concat(g, "ab", {a, b}), concat(g, "ca", {c, a}), concat(g, "ac", {a, c}), concat(g, "ad", {a, d})};
  validate(g);
  EXPECT_EQ(mark_concats_in_place(g), 2);
  EXPECT_TRUE(concat_in_place(g.nodes[4]));   // ab: [a b]
  EXPECT_TRUE(concat_in_place(g.nodes[5]));   // ca: [c a], so the buffer is [c a b]
  EXPECT_FALSE(concat_in_place(g.nodes[6]));  // ac: c would need a second place, after a
  EXPECT_FALSE(concat_in_place(g.nodes[7]));  // ad: d would share b's bytes
  // And it runs: the copies read a and c where the in-place concats put them.
  CompileOptions o;
  o.threads = 1;
  o.optimize = false;
  auto m = CompiledModel::compile(g, o);
  const Tensor in = random_tensor(DType::f32, {1, 16, 4, 4}, 4);
  const auto outs = m->run({in});
  auto ref = [&](const char* op, float v) {
    const std::string s = op;
    return s == "a" ? (v > 0 ? v : 0.f) : s == "b" ? 1.f / (1.f + std::exp(-v)) : s == "c" ? std::tanh(v) : std::exp(v);
  };
  const char* parts[4][2] = {{"a", "b"}, {"c", "a"}, {"a", "c"}, {"a", "d"}};
  for (int o2 = 0; o2 < 4; ++o2)
    for (int half = 0; half < 2; ++half)
      for (int64_t i = 0; i < 256; ++i) {
        const float v = in.data<float>()[i];
        ASSERT_NEAR(outs[static_cast<size_t>(o2)].data<float>()[half * 256 + i], ref(parts[o2][half], v), 1e-5f * (1 + std::fabs(ref(parts[o2][half], v))))
            << "output " << o2 << " part " << half << " at " << i;
      }
}

TEST(ConcatInPlace, AClaimedPlacementThatCannotHoldIsRefused) {
  Graph g;
  const ValueId x = g.add_value("x", DType::f32, {2, 16, 4, 4}, true);
  g.inputs = {x};
  const ValueId a = unary(g, "Relu", "a", x), b = unary(g, "Relu", "b", x);
  g.outputs = {concat(g, "cat", {a, b})};
  validate(g);
  g.nodes.back().attrs.set(kConcatInPlaceAttr, int64_t{1});  // as a corrupt artifact might say
  CompileOptions o;
  o.optimize = false;
  try {
    CompiledModel::compile(g, o);
    FAIL() << "compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'cat' (Concat) is marked in place"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lowbit
