// fp32 element-wise kernels (kernels/f32-velementwise, operators/elementwise_f32):
// - every kernel set the host runs gives the portable set's bits, on random and special values;
// - the portable set against outside oracles: the reference kernels for the exact ops,
//   double-precision math for Sigmoid / SiLU over a sweep of the whole float range (the error
//   bound is the one README.md documents);
// - every dispatch row through its driver against the reference, broadcasts and threads included;
// - inference BatchNormalization (+ fused Relu / Clip) rows against the reference, and the fusion;
// - the SiLU fusion pass.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "lowbit/common/error.h"
#include "lowbit/dispatch/registry.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/kernels/f32-velementwise/velementwise.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/operators/elementwise_f32.h"
#include "lowbit/passes/passes.h"
#include "lowbit/quant/quantize.h"
#include "lowbit/runtime/compiled_model.h"
#include "lowbit/runtime/thread_pool.h"

namespace lowbit {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// NaN equals NaN; +0 equals -0 (NEON's fmax orders zeros differently from maxps).
bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Random values of every magnitude plus the special ones.
std::vector<float> test_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  const float specials[] = {0.0f,  -0.0f, 1.0f,   -1.0f,  3.0f,   -3.0f,   6.0f,      -6.0f,  kInf, -kInf, kNaN,
                            87.3f, -87.3f, 88.0f, -88.0f, 104.0f, -104.0f, 1e-40f,    -1e-40f, 1e30f, -1e30f,
                            0.5f,  -0.5f, 20.0f,  -20.0f, 1e-7f,  -1e-7f,  3.4e38f,   -3.4e38f};
  std::uniform_real_distribution<float> small(-12.0f, 12.0f);
  std::uniform_int_distribution<uint32_t> bits;
  for (size_t i = 0; i < n; ++i) {
    if (i % 7 == 3) v[i] = specials[(i / 7) % std::size(specials)];
    else if (i % 3 == 0) v[i] = std::bit_cast<float>(bits(rng));  // any float, NaNs included
    else v[i] = small(rng);
  }
  return v;
}

const F32VElementwiseKernels& portable() { return *f32_velementwise_sets().back(); }

std::vector<const F32VElementwiseKernels*> host_sets() {
  std::vector<const F32VElementwiseKernels*> v;
  for (const F32VElementwiseKernels* k : f32_velementwise_sets())
    if (k->runs_on(host_target())) v.push_back(k);
  return v;
}

VUnaryParams params_for(VUnary op) {
  VUnaryParams p;
  if (op == VUnary::leaky_relu) p.alpha = 0.1f;
  if (op == VUnary::hard_sigmoid) p.alpha = 0.2f, p.beta = 0.5f;
  if (op == VUnary::clamp) p.lo = -1.5f, p.hi = 6.0f;
  return p;
}

TEST(F32VElementwise, EverySetGivesThePortableSetsBits) {
  for (size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{7}, size_t{8}, size_t{15}, size_t{16}, size_t{17},
                   size_t{33}, size_t{1000}}) {
    const std::vector<float> a = test_values(n, static_cast<uint32_t>(n)), b = test_values(n, static_cast<uint32_t>(n + 99));
    for (const F32VElementwiseKernels* k : host_sets()) {
      for (int u = 0; u < kVUnaryCount; ++u) {
        const VUnary op = static_cast<VUnary>(u);
        std::vector<float> y(n + 1, 123.0f), r(n + 1, 123.0f);  // + 1: nothing past n is written
        k->unary[u](n, a.data(), y.data(), params_for(op));
        portable().unary[u](n, a.data(), r.data(), params_for(op));
        for (size_t i = 0; i <= n; ++i)
          ASSERT_TRUE(same(y[i], r[i])) << k->isa << " " << vunary_name(op) << " n " << n << " x " << a[i % n]
                                        << ": " << y[i] << " vs " << r[i];
      }
      for (int o = 0; o < kVBinaryCount; ++o)
        for (int mode = 0; mode < 3; ++mode) {
          const VBinaryFn f = mode == 0 ? k->vv[o] : mode == 1 ? k->vs[o] : k->sv[o];
          const VBinaryFn g = mode == 0 ? portable().vv[o] : mode == 1 ? portable().vs[o] : portable().sv[o];
          std::vector<float> y(n + 1, 123.0f), r(n + 1, 123.0f);
          f(n, a.data(), b.data(), y.data());
          g(n, a.data(), b.data(), r.data());
          for (size_t i = 0; i <= n; ++i)
            ASSERT_TRUE(same(y[i], r[i])) << k->isa << " " << vbinary_name(static_cast<VBinary>(o)) << " mode " << mode;
        }
    }
  }
}

// The exact ops against the reference kernels, element by element (the reference runs one node).
float reference_unary(const std::string& op, float x, const VUnaryParams& p) {
  Graph g;
  ValueId vx = g.add_value("x", DType::f32, {1}, true), vy = g.add_value("y", DType::f32, {1}, true);
  Attributes a;
  if (op == "LeakyRelu") a.set("alpha", p.alpha);
  if (op == "HardSigmoid") a.set("alpha", p.alpha), a.set("beta", p.beta);
  std::vector<ValueId> ins = {vx};
  Tensor lo(DType::f32, {}), hi(DType::f32, {});
  lo.data<float>()[0] = p.lo, hi.data<float>()[0] = p.hi;
  if (op == "Clip") ins.push_back(g.add_constant("lo", lo)), ins.push_back(g.add_constant("hi", hi));
  g.add_node(op, "n", ins, {vy}, a);
  float y = 0;
  std::vector<TensorView> in = {TensorView{&x, DType::f32, {1}}};
  if (op == "Clip") in.push_back(lo.view()), in.push_back(hi.view());
  std::vector<TensorView> out = {TensorView{&y, DType::f32, {1}}};
  find_reference(op)(g, g.nodes[0], in, out);
  return y;
}

TEST(F32VElementwise, ExactOpsMatchTheReference) {
  const std::vector<float> xs = test_values(3000, 5);
  const std::pair<VUnary, const char*> ops[] = {{VUnary::relu, "Relu"},
                                                {VUnary::clamp, "Clip"},
                                                {VUnary::leaky_relu, "LeakyRelu"},
                                                {VUnary::hard_swish, "HardSwish"}};
  for (auto [op, name] : ops) {
    std::vector<float> y(xs.size());
    portable().unary[static_cast<int>(op)](xs.size(), xs.data(), y.data(), params_for(op));
    for (size_t i = 0; i < xs.size(); ++i)
      ASSERT_TRUE(same(y[i], reference_unary(name, xs[i], params_for(op)))) << name << " x " << xs[i] << " got " << y[i];
  }
  // HardSigmoid fuses alpha * x + beta (one rounding; the reference rounds twice): 1 ulp.
  std::vector<float> y(xs.size());
  portable().unary[static_cast<int>(VUnary::hard_sigmoid)](xs.size(), xs.data(), y.data(), params_for(VUnary::hard_sigmoid));
  for (size_t i = 0; i < xs.size(); ++i) {
    const float r = reference_unary("HardSigmoid", xs[i], params_for(VUnary::hard_sigmoid));
    if (std::isnan(r)) ASSERT_TRUE(std::isnan(y[i]));
    else ASSERT_LE(std::fabs(y[i] - r), 6e-8f) << xs[i];
  }
}

// Error in units of the float spacing at the true value (an absolute 2^-149 floor: denormals).
double ulp_error(float got, double truth) {
  if (std::isnan(truth)) return std::isnan(got) ? 0.0 : 1e30;
  if (std::isinf(truth)) return got == truth ? 0.0 : 1e30;
  const double t = std::fabs(truth);
  const double ulp = t < 1.1754943508222875e-38 ? 1.401298464324817e-45 : std::ldexp(1.0, std::ilogb(t) - 23);
  return std::fabs(static_cast<double>(got) - truth) / ulp;
}

double sigmoid_truth(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Sigmoid and SiLU over the whole float range: every 4099th bit pattern (1.05 M floats, both
// signs, denormals, infinities, NaNs), plus every float step near 0 and the saturation points.
// The bound (README.md): 2 ulp for Sigmoid where its value is a normal float (x >= -87.33), and
// below that an absolute error under 1.2e-38 (the kernel returns 0 from x = -88.38); SiLU within
// 2 ulp for x >= -87.33 where x * sigmoid(x) is normal, and below -87.33 (-0 from -88.38) an
// absolute error under 1.1e-36. Measured 1.97 and 1.98 ulp; every set gives the same bits.
TEST(F32VElementwise, SigmoidAndSiluAccuracyOverTheFloatRange) {
  std::vector<float> xs;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  for (float x = -1.0f; x <= 1.0f; x += 1.0f / 4096) xs.push_back(x);
  for (float x : {87.33654f, -87.33654f, 87.34f, -87.34f, 88.7f, -88.7f, 103.9f, -103.9f, kInf, -kInf}) xs.push_back(x);
  for (const F32VElementwiseKernels* k : host_sets()) {
    std::vector<float> s(xs.size()), si(xs.size());
    k->unary[static_cast<int>(VUnary::sigmoid)](xs.size(), xs.data(), s.data(), {});
    k->unary[static_cast<int>(VUnary::silu)](xs.size(), xs.data(), si.data(), {});
    double worst_s = 0, worst_silu = 0;
    float at_s = 0, at_silu = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const float x = xs[i];
      if (std::isnan(x)) {
        ASSERT_TRUE(std::isnan(s[i]) && std::isnan(si[i])) << k->isa;
        continue;
      }
      const double t = sigmoid_truth(x);
      if (t >= 1.1754943508222875e-38) {
        const double e = ulp_error(s[i], t);
        if (e > worst_s) worst_s = e, at_s = x;
      } else {
        ASSERT_LT(std::fabs(s[i] - t), 1.2e-38) << k->isa << " sigmoid(" << x << ") = " << s[i];
      }
      ASSERT_GE(s[i], 0.0f) << x;
      ASSERT_LE(s[i], 1.0f) << x;
      const double u = static_cast<double>(x) * t;
      if (std::isinf(x)) continue;  // SiLU(+inf) = inf; SiLU(-inf) = -inf * 0 = NaN, as x * Sigmoid(x) in float
      if (x >= -87.33f && std::fabs(u) >= 1.1754943508222875e-38 && std::fabs(u) < 3.4e38) {
        const double e = ulp_error(si[i], u);
        if (e > worst_silu) worst_silu = e, at_silu = x;
      } else if (std::fabs(u) < 1.1754943508222875e-38 || x < -87.33f) {
        ASSERT_LT(std::fabs(si[i] - u), 1.1e-36) << k->isa << " silu(" << x << ") = " << si[i];
      }
    }
    std::printf("%s: sigmoid max %.2f ulp (at %g), silu max %.2f ulp (at %g), %zu inputs\n", k->isa, worst_s, at_s,
                worst_silu, at_silu, xs.size());
    EXPECT_LE(worst_s, 2.0) << k->isa << " at " << at_s;
    EXPECT_LE(worst_silu, 2.0) << k->isa << " at " << at_silu;
  }
  // The specials, exactly.
  const float in[] = {0.0f, kInf, -kInf, -200.0f, 200.0f};
  float out[5];
  portable().unary[static_cast<int>(VUnary::sigmoid)](5, in, out, {});
  EXPECT_EQ(out[0], 0.5f);
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[3], 0.0f);
  EXPECT_EQ(out[4], 1.0f);
}

// ---- dispatch rows through the driver ----

struct OneNode {
  Graph g;
  std::vector<Tensor> inputs;
  void input(const Shape& s, uint32_t seed) {
    Tensor t(DType::f32, s);
    const std::vector<float> v = test_values(static_cast<size_t>(t.numel()), seed);
    std::memcpy(t.data<float>(), v.data(), v.size() * sizeof(float));
    ValueId id = g.add_value("x" + std::to_string(inputs.size()), DType::f32, s, true);
    g.inputs.push_back(id);
    inputs.push_back(std::move(t));
  }
  void node(const std::string& op, Attributes a = {}) {
    ValueId y = g.add_value("y");
    std::vector<ValueId> ins(g.inputs.begin(), g.inputs.end());
    g.add_node(op, "n0", ins, {y}, std::move(a));
    g.outputs = {y};
    validate(g);
  }
  Tensor out() const { return Tensor(DType::f32, g.value(g.outputs[0]).shape); }
  std::vector<TensorView> views() const {
    std::vector<TensorView> v;
    for (const Tensor& t : inputs) v.push_back(t.view());
    return v;
  }
};

std::vector<const KernelCandidate*> velementwise_rows(const std::string& op) {
  std::vector<const KernelCandidate*> v;
  for (const KernelCandidate& c : all_candidates())
    if (c.op == op && (c.check == &check_velementwise_f32 || c.check == &check_batchnorm_f32)) v.push_back(&c);
  return v;
}

bool runs_here(const KernelCandidate& c) {
  if (!c.create) return false;
  if (!c.features.empty() && c.arch != host_target().arch) return false;
  for (Feature f : c.features)
    if (!host_target().has(f)) return false;
  return true;
}

// tol(i, r): the allowed |got - want| at element i when not exact (default: 4e-7 relative).
void expect_rows_match_reference(const OneNode& m, bool exact, const std::string& what,
                                 const std::function<float(int64_t, float)>& tol = nullptr) {
  const Node& n = m.g.nodes[0];
  Tensor ref = m.out();
  std::vector<TensorView> in = m.views(), ro = {ref.view()};
  find_reference(n.op)(m.g, n, in, ro);
  int ran = 0;
  for (const KernelCandidate* c : velementwise_rows(n.op)) {
    if (!runs_here(*c)) continue;
    const Target host = host_target();
    for (int threads : {1, 3}) {
      NodeContext ctx{m.g, n, host, threads};
      ASSERT_EQ(c->check(ctx), "") << c->name << " " << what;
      auto k = c->create(ctx);
      ThreadPool pool(threads);
      Tensor y = m.out();
      std::vector<TensorView> out = {y.view()};
      k->run(in, out, pool);
      for (int64_t i = 0; i < y.numel(); ++i) {
        const float a = y.data<float>()[i], r = ref.data<float>()[i];
        if (exact) ASSERT_TRUE(same(a, r)) << c->name << " " << what << " at " << i << ": " << a << " vs " << r;
        else if (std::isnan(r) || std::isinf(r)) ASSERT_TRUE(same(a, r) || std::isnan(r)) << c->name << " " << what << " at " << i;
        else ASSERT_LE(std::fabs(a - r), tol ? tol(i, r) : 4e-7f * std::max(1.0f, std::fabs(r))) << c->name << " " << what << " at " << i;
      }
    }
    ++ran;
  }
  EXPECT_GE(ran, 1) << what << ": no row ran (the portable one always can)";
}

TEST(F32VElementwise, EveryUnaryRowMatchesTheReference) {
  uint32_t seed = 1;
  for (const char* op : {"Relu", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish", "Sigmoid", "SiLU"})
    for (Shape s : std::vector<Shape>{{1}, {7}, {1, 3, 5, 5}, {2, 16, 33, 17}, {1, 1, 200, 200}}) {
      OneNode m;
      m.input(s, seed++);
      Attributes a;
      if (std::string(op) == "LeakyRelu") a.set("alpha", 0.07f);
      if (std::string(op) == "HardSigmoid") a.set("alpha", 0.25f), a.set("beta", 0.4f);
      if (std::string(op) == "Clip") {
        Tensor lo(DType::f32, {}), hi(DType::f32, {});
        lo.data<float>()[0] = 0.0f, hi.data<float>()[0] = 6.0f;
        ValueId y = m.g.add_value("y");
        m.g.add_node("Clip", "n0", {m.g.inputs[0], m.g.add_constant("lo", lo), m.g.add_constant("hi", hi)}, {y});
        m.g.outputs = {y};
        validate(m.g);
        m.inputs.push_back(lo), m.inputs.push_back(hi);
      } else {
        m.node(op, a);
      }
      const bool exact = std::string(op) != "Sigmoid" && std::string(op) != "SiLU" && std::string(op) != "HardSigmoid";
      expect_rows_match_reference(m, exact, std::string(op) + " " + shape_str(s));
    }
}

// BN parameters: gamma / beta / mean of both signs, var in (0, 4]; channel tails, tiny and big
// planes, rank 2, batch 2; no clamp, Relu, Clip. The rows round once (fma), the reference rounds
// the product and then the sum: within a rounding of it; every set gives the portable set's bits.
TEST(F32VElementwise, EveryBatchNormRowMatchesTheReference) {
  const std::vector<float> xs = test_values(4099, 8);
  std::vector<float> want(xs.size()), got(xs.size());
  for (const auto& [s, b, lo, hi] : std::vector<std::array<float, 4>>{
           {0.37f, -1.25f, -kInf, kInf}, {-2.5f, 0.75f, 0.0f, kInf}, {1e-3f, 3.0f, 0.0f, 6.0f}}) {
    portable().affine(xs.size(), xs.data(), want.data(), s, b, lo, hi);
    for (const F32VElementwiseKernels* k : host_sets()) {
      k->affine(xs.size(), xs.data(), got.data(), s, b, lo, hi);
      for (size_t i = 0; i < xs.size(); ++i)
        ASSERT_TRUE(same(got[i], want[i])) << k->isa << " affine(" << xs[i] << ") " << got[i] << " vs " << want[i];
    }
  }
  uint32_t seed = 300;
  std::mt19937 rng(77);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f), pos(0.0f, 4.0f);
  for (Shape s : std::vector<Shape>{{1, 3, 5, 5}, {2, 17, 33, 9}, {1, 40, 7, 7}, {1, 5}, {1, 64, 56, 56}, {1, 1, 1, 1}})
    for (int act = 0; act < 3; ++act) {
      OneNode m;
      m.input(s, seed++);
      const int64_t C = s[1];
      std::vector<ValueId> ins = {m.g.inputs[0]};
      for (int p = 0; p < 4; ++p) {
        Tensor t(DType::f32, {C});
        for (int64_t c = 0; c < C; ++c) t.data<float>()[c] = p == 3 ? pos(rng) + (c == 0 ? 0.0f : 1e-3f) : u(rng);
        ins.push_back(m.g.add_constant("p" + std::to_string(p), t));
        m.inputs.push_back(std::move(t));
      }
      Attributes a;
      a.set("epsilon", 1e-3f);
      if (act >= 1) a.set("act_min", 0.0f);
      if (act == 2) a.set("act_max", 6.0f);
      const ValueId y = m.g.add_value("y");
      m.g.add_node("BatchNormalization", "n0", ins, {y}, a);
      m.g.outputs = {y};
      validate(m.g);
      // One rounding of x * k + off against two: within an ulp of |x * k| + |off| (the sum cancels).
      const float* x = m.inputs[0].data<float>();
      const float *g = m.inputs[1].data<float>(), *be = m.inputs[2].data<float>(), *mu = m.inputs[3].data<float>(),
                  *var = m.inputs[4].data<float>();
      const int64_t inner = num_elements(s) / (s[0] * C);
      const auto tol = [&](int64_t i, float) {
        const int64_t c = (i / inner) % C;
        const float k = g[c] / std::sqrt(var[c] + 1e-3f), off = be[c] - mu[c] * k;
        return 1.2e-7f * (std::fabs(x[i] * k) + std::fabs(off)) + 1e-37f;
      };
      expect_rows_match_reference(m, false, "BatchNormalization act " + std::to_string(act) + " " + shape_str(s), tol);
    }
}

TEST(F32VElementwise, BatchNormReluFusionMatchesTheUnfusedGraph) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  auto rand = [&](Shape sh, float lo = 0.0f) {
    Tensor t(DType::f32, sh);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = lo > 0 ? lo + std::fabs(u(rng)) : u(rng);
    return t;
  };
  // DenseNet's pattern: Concat -> BN -> Relu, and a BN -> Clip(0, 6); a BN whose output is also
  // read elsewhere keeps its Relu as a node.
  Graph g;
  const ValueId a = g.add_value("a", DType::f32, {1, 8, 9, 9}, true), b = g.add_value("b", DType::f32, {1, 8, 9, 9}, true);
  g.inputs = {a, b};
  const ValueId cat = g.add_value("cat");
  Attributes ax;
  ax.set("axis", int64_t{1});
  g.add_node("Concat", "cat", {a, b}, {cat}, ax);
  auto bn = [&](const std::string& name, ValueId x, int64_t C) {
    std::vector<ValueId> in = {x};
    for (int p = 0; p < 4; ++p) in.push_back(g.add_constant(name + std::to_string(p), rand({C}, p == 3 ? 0.1f : 0.0f)));
    const ValueId y = g.add_value(name + "_y");
    g.add_node("BatchNormalization", name, in, {y});
    return y;
  };
  const ValueId n1 = bn("bn1", cat, 16), r1 = g.add_value("r1");
  g.add_node("Relu", "relu1", {n1}, {r1});
  Tensor lo(DType::f32, {}), hi(DType::f32, {});
  lo.data<float>()[0] = 0.0f, hi.data<float>()[0] = 6.0f;
  const ValueId n2 = bn("bn2", a, 8), r2 = g.add_value("r2");
  g.add_node("Clip", "clip2", {n2, g.add_constant("lo", lo), g.add_constant("hi", hi)}, {r2});
  const ValueId n3 = bn("bn3", b, 8), r3 = g.add_value("r3");
  g.add_node("Relu", "relu3", {n3}, {r3});
  g.outputs = {r1, r2, r3, n3};
  validate(g);

  CompileOptions fused, plain;
  plain.optimize = false;
  auto mf = CompiledModel::compile(g, fused);
  auto mp = CompiledModel::compile(g, plain);
  int bn_fused = 0, acts = 0;
  for (const Step& st : mf->steps()) {
    const Node& n = mf->graph().nodes[static_cast<size_t>(st.node)];
    if (n.op == "BatchNormalization") {
      bn_fused += n.attrs.has("act_min");
      EXPECT_EQ(st.choice.chosen->name.rfind("f32-vaffine-batchnorm-", 0), 0u) << st.choice.chosen->name;
    }
    acts += n.op == "Relu" || n.op == "Clip";
  }
  EXPECT_EQ(bn_fused, 2);
  EXPECT_EQ(acts, 1);  // bn3's output is a graph output too
  const std::vector<Tensor> in = {rand({1, 8, 9, 9}), rand({1, 8, 9, 9})};
  const std::vector<Tensor> x = mf->run(in), y = mp->run(in);
  ASSERT_EQ(x.size(), y.size());
  for (size_t o = 0; o < x.size(); ++o)
    for (int64_t i = 0; i < x[o].numel(); ++i)
      ASSERT_NEAR(x[o].data<float>()[i], y[o].data<float>()[i], 1e-6f * (1 + std::fabs(y[o].data<float>()[i])))
          << "output " << o << " element " << i;
}

TEST(F32VElementwise, EveryBinaryRowMatchesTheReferenceOnEveryBroadcast) {
  uint32_t seed = 100;
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{1, 3, 7, 9}, {1, 3, 7, 9}},   {{1, 40, 5, 5}, {1, 40, 1, 1}}, {{1, 40, 1, 1}, {1, 40, 5, 5}},
      {{2, 8, 3, 3}, {2, 8, 1, 1}},   {{1, 5, 6, 7}, {}},             {{}, {1, 5, 6, 7}},
      {{1, 5, 6, 7}, {1}},            {{40, 5, 6}, {40, 1, 1}},       {{1, 96, 56, 56}, {1, 96, 1, 1}},
      {{3, 100000}, {3, 1}},          {{1, 1, 1}, {1, 1, 1}}};
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    for (const auto& [a, b] : shapes) {
      OneNode m;
      m.input(a, seed++);
      m.input(b, seed++);
      m.node(op);
      expect_rows_match_reference(m, true, std::string(op) + " " + shape_str(a) + " " + shape_str(b));
    }
}

TEST(F32VElementwise, UnsupportedInputsAreRefusedWithAReason) {
  OneNode m;
  m.input({1, 1, 4, 4}, 1);
  m.input({1, 3, 4, 4}, 2);
  m.node("Mul");
  const Target host = host_target();
  NodeContext ctx{m.g, m.g.nodes[0], host, 1};
  EXPECT_NE(check_velementwise_f32(ctx).find("broadcast 1x1x4x4 with 1x3x4x4"), std::string::npos)
      << check_velementwise_f32(ctx);
  Graph g;
  ValueId x = g.add_value("x", DType::i32, {4}, true), y = g.add_value("y", DType::i32, {4}, true);
  g.add_node("Relu", "r", {x}, {y});
  EXPECT_EQ(check_velementwise_f32(NodeContext{g, g.nodes[0], host, 1}), "input dtype i32, needs f32");
}

// ---- SiLU fusion ----

TEST(F32VElementwise, SiluFusionRewritesOnlyXTimesSigmoidOfX) {
  Graph g;
  ValueId x = g.add_value("x", DType::f32, {1, 4, 3, 3}, true);
  g.inputs = {x};
  ValueId s = g.add_value("s"), y = g.add_value("y");
  g.add_node("Sigmoid", "sig", {x}, {s});
  g.add_node("Mul", "mul", {s, x}, {y});  // either order
  // Not fusable: the Sigmoid also feeds another node; and a Mul of a different value.
  ValueId x2 = g.add_value("x2", DType::f32, {1, 4, 3, 3}, true);
  g.inputs.push_back(x2);
  ValueId s2 = g.add_value("s2"), y2 = g.add_value("y2"), z2 = g.add_value("z2");
  g.add_node("Sigmoid", "sig2", {x2}, {s2});
  g.add_node("Mul", "mul2", {x2, s2}, {y2});
  g.add_node("Add", "add2", {s2, y2}, {z2});
  ValueId y3 = g.add_value("y3");
  g.add_node("Mul", "mul3", {x2, s}, {y3});  // x2 * Sigmoid(x): s now has two readers
  g.outputs = {y, z2, y3};
  validate(g);
  EXPECT_EQ(fuse_silu(g), 0);  // s feeds mul and mul3
  g.nodes.pop_back();
  g.outputs = {y, z2};
  g.remove_dead();
  EXPECT_EQ(fuse_silu(g), 1);
  validate(g);
  int silu = 0, sigmoid = 0;
  for (const Node& n : g.nodes) silu += n.op == "SiLU", sigmoid += n.op == "Sigmoid";
  EXPECT_EQ(silu, 1);
  EXPECT_EQ(sigmoid, 1);  // sig2 stays: add2 reads it
}

// ---- Conv post-ops ----

// x -> Conv -> SiLU -> Conv -> HardSwish -> Conv (residual Add) -> LeakyRelu -> y, and a Conv ->
// Sigmoid whose conv output is also read elsewhere (not fusable): compiled with the post-ops fused
// into the convs and without, the same outputs; the fused graph has each activation as its conv's
// post_op; calibration refuses the fused graph with the reason.
TEST(F32VElementwise, ConvPostOpFusionMatchesTheUnfusedGraph) {
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto rand = [&](Shape s) {
    Tensor t(DType::f32, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    return t;
  };
  Graph g;
  const ValueId x = g.add_value("x", DType::f32, {1, 8, 12, 12}, true);
  g.inputs = {x};
  Attributes k3;
  k3.set("kernel_shape", std::vector<int64_t>{3, 3});
  k3.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ValueId cur = x;
  auto conv = [&](const std::string& name, ValueId in, int64_t C, int64_t M) {
    const ValueId w = g.add_constant(name + "_w", rand({M, C, 3, 3}));
    const ValueId b = g.add_constant(name + "_b", rand({M}));
    const ValueId y = g.add_value(name + "_y");
    g.add_node("Conv", name, {in, w, b}, {y}, k3);
    return y;
  };
  auto act = [&](const std::string& op, ValueId in, Attributes a = {}) {
    const ValueId y = g.add_value(op + "_y" + std::to_string(g.nodes.size()));
    g.add_node(op, op + std::to_string(g.nodes.size()), {in}, {y}, std::move(a));
    return y;
  };
  cur = act("SiLU", conv("c1", cur, 8, 16));
  cur = act("HardSwish", conv("c2", cur, 16, 16));
  const ValueId c3 = conv("c3", cur, 16, 16);
  const ValueId sum = g.add_value("sum");
  g.add_node("Add", "add", {c3, cur}, {sum});
  Attributes leaky;
  leaky.set("alpha", 0.2f);
  const ValueId y1 = act("LeakyRelu", sum, leaky);
  const ValueId c4 = conv("c4", y1, 16, 8);
  const ValueId y2 = act("Sigmoid", c4);
  g.outputs = {y1, y2, c4};  // c4 is read as an output too: its Sigmoid stays a node
  validate(g);

  CompileOptions fused, plain;
  plain.fuse_post_ops = false;
  auto mf = CompiledModel::compile(g, fused);
  auto mp = CompiledModel::compile(g, plain);
  int post_ops = 0, act_nodes = 0;
  for (const Node& n : mf->graph().nodes) {
    post_ops += n.attrs.has("post_op");
    act_nodes += n.op == "SiLU" || n.op == "HardSwish" || n.op == "LeakyRelu" || n.op == "Sigmoid";
  }
  EXPECT_EQ(post_ops, 3);
  EXPECT_EQ(act_nodes, 1);  // the Sigmoid after c4
  for (const Node& n : mp->graph().nodes) EXPECT_FALSE(n.attrs.has("post_op")) << n.label();
  const std::vector<Tensor> in = {rand({1, 8, 12, 12})};
  const std::vector<Tensor> a = mf->run(in), b = mp->run(in);
  ASSERT_EQ(a.size(), b.size());
  for (size_t o = 0; o < a.size(); ++o)
    for (int64_t i = 0; i < a[o].numel(); ++i)
      ASSERT_NEAR(a[o].data<float>()[i], b[o].data<float>()[i], 1e-5f * (1 + std::fabs(b[o].data<float>()[i])))
          << "output " << o << " element " << i;
  QuantizeOptions q;
  try {
    calibrate_model(*mf, q);
    ADD_FAILURE() << "calibrating a graph with fused post-ops must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fuse_post_ops = false"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(calibrate_model(*mp, q));
}

// A PP-LCNet block as Paddle2ONNX writes it (the PP-OCRv4 detector's backbone):
//   Conv 3x3 -> Mul(a) -> Add(b) -> x * Clip(x + 3, 0, 6) / 6 -> Mul(a2) -> Add(b2)
//   -> depthwise Conv 3x3 -> Mul(per-channel) -> Sub(c) -> Conv 1x1 -> x * HardSigmoid(x; 1/6, 0.5) -> y
// plus a spelled-out HardSwish whose x + 3 is also a graph output (not fusable). Optimised, the
// affines before an activation fold into the convs' weights, the two HardSwishes become the convs'
// post_op and the affine after it their post_scale / post_shift: the same outputs as the graph run
// as written, and no Mul, Add, Sub, Clip or Div left but the unfusable one's.
TEST(F32VElementwise, LcnetBlockFusionMatchesTheUnfusedGraph) {
  std::mt19937 rng(22);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto rand = [&](Shape s) {
    Tensor t(DType::f32, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    return t;
  };
  auto scalar = [](float v) {
    Tensor t(DType::f32, {1});
    t.data<float>()[0] = v;
    return t;
  };
  Graph g;
  const ValueId x = g.add_value("x", DType::f32, {1, 8, 13, 11}, true);
  g.inputs = {x};
  int k = 0;
  auto node = [&](const std::string& op, std::vector<ValueId> in, Attributes a = {}) {
    const ValueId y = g.add_value(op + "_y" + std::to_string(k));
    g.add_node(op, op + std::to_string(k++), std::move(in), {y}, std::move(a));
    return y;
  };
  auto c = [&](float v) { return g.add_constant("c" + std::to_string(k++), scalar(v)); };
  auto conv = [&](ValueId in, int64_t C, int64_t M, int64_t kk, int64_t group) {
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{kk, kk});
    a.set("pads", std::vector<int64_t>(4, kk / 2));
    a.set("group", group);
    const ValueId w = g.add_constant("w" + std::to_string(k), rand({M, C / group, kk, kk}));
    const ValueId b = g.add_constant("b" + std::to_string(k), rand({M}));
    return node("Conv", {in, w, b}, a);
  };
  auto hardswish = [&](ValueId v, ValueId* plus3 = nullptr) {
    const ValueId p = node("Add", {v, c(3.0f)});
    if (plus3) *plus3 = p;
    const ValueId cl = node("Clip", {p, c(0.0f), c(6.0f)});
    return node("Div", {node("Mul", {v, cl}), c(6.0f)});
  };
  ValueId cur = node("Add", {node("Mul", {c(0.94f), conv(x, 8, 16, 3, 1)}), c(0.5f)});
  cur = node("Add", {node("Mul", {hardswish(cur), c(0.48f)}), c(-0.01f)});
  const ValueId dw = conv(cur, 16, 16, 3, 16);
  cur = node("Sub", {node("Mul", {dw, g.add_constant("pc", rand({16, 1, 1}))}), c(0.3f)});
  const ValueId pw = conv(cur, 16, 12, 1, 1);
  Attributes hs;
  hs.set("alpha", 1.0f / 6.0f);
  hs.set("beta", 0.5f);
  const ValueId y = node("Mul", {pw, node("HardSigmoid", {pw}, hs)});
  ValueId plus3 = kNoValue;
  const ValueId y2 = hardswish(conv(x, 8, 4, 1, 1), &plus3);
  g.outputs = {y, y2, plus3};
  validate(g);

  CompileOptions plain;
  plain.optimize = false;
  auto mf = CompiledModel::compile(g, CompileOptions{});
  auto mp = CompiledModel::compile(g, plain);
  int post_hardswish = 0, post_affine = 0, arithmetic = 0;
  for (const Node& n : mf->graph().nodes) {
    post_hardswish += n.attrs.get_string("post_op", "") == "HardSwish";
    post_affine += n.attrs.has("post_scale") && n.attrs.has("post_shift");
    arithmetic += n.op == "Mul" || n.op == "Add" || n.op == "Sub" || n.op == "Clip" || n.op == "Div";
  }
  EXPECT_EQ(post_hardswish, 2);  // the first conv's and the pointwise conv's
  EXPECT_EQ(post_affine, 1);
  EXPECT_EQ(arithmetic, 4);  // the unfusable HardSwish: Add, Clip, Mul, Div
  const std::vector<Tensor> in = {rand({1, 8, 13, 11})};
  const std::vector<Tensor> a = mf->run(in), b = mp->run(in);
  ASSERT_EQ(a.size(), b.size());
  for (size_t o = 0; o < a.size(); ++o)
    for (int64_t i = 0; i < a[o].numel(); ++i)
      ASSERT_NEAR(a[o].data<float>()[i], b[o].data<float>()[i], 2e-5f * (1 + std::fabs(b[o].data<float>()[i])))
          << "output " << o << " element " << i;
}

}  // namespace
}  // namespace lowbit
