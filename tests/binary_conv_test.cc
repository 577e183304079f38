// Imported binary models: the BinaryConv op (sign of a real-valued input, b1 weights times alpha)
// on every dispatch row against its reference, the binarize pass's patterns (Sign, BipolarQuant,
// BN folded in, Sign(W) weights) against the same graph run with ONNX semantics, and the
// resnet18-binary zoo model in fp32, int8 and from an artifact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <tuple>

#include "lowbit/artifact/artifact.h"
#include "lowbit/dispatch/registry.h"
#include "lowbit/frontend/zoo/zoo.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/ir/codes.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/quant/guard.h"
#include "lowbit/quant/precision.h"
#include "lowbit/runtime/compiled_model.h"
#include "lowbit/runtime/thread_pool.h"

namespace lowbit {
namespace {

struct BCase {
  int64_t N = 1, C = 64, H = 6, W = 5, M = 7, K = 3, S = 1, D = 1;
  std::vector<int64_t> pads = {1, 1, 1, 1};
  int64_t pad_value = 0;
  bool residual = false, bias = true, relu = false;
  int32_t zp_x = 128;  // u8 input
  int fill = 0;        // 0 random, +1 / -1 every input of that sign (the +-K extremes)
  bool signs_out = false;  // packed signs out (out_signs = 1)
  bool u8_out = false;     // packed signs in: the output's domain (else f32)
  std::string str() const {
    return "N" + std::to_string(N) + " C" + std::to_string(C) + " " + std::to_string(H) + "x" + std::to_string(W) +
           " M" + std::to_string(M) + " k" + std::to_string(K) + " s" + std::to_string(S) + " d" + std::to_string(D) +
           " pad " + std::to_string(pads[0]) + "," + std::to_string(pads[1]) + "," + std::to_string(pads[2]) + "," +
           std::to_string(pads[3]) + " pad_value " + std::to_string(pad_value) + (residual ? " residual" : "") +
           (relu ? " relu" : "") + " zp " + std::to_string(zp_x) + " fill " + std::to_string(fill) +
           (signs_out ? " signs-out" : "") + (u8_out ? " u8-out" : "");
  }
};

struct Built {
  Graph g;
  NodeId node = 0;
  std::vector<Tensor> inputs;
};

// One BinaryConv node with input dtype `x` (f32 or u8). f32 inputs include exact 0 and -0 (both
// +1) besides random values; u8 inputs include the zero point itself (+1) and its neighbours.
Built build(const BCase& c, DType xt, uint32_t seed) {
  Built b;
  Graph& g = b.g;
  std::mt19937 rng(seed);
  Tensor x(xt, {c.N, c.C, c.H, c.W});
  if (xt == DType::b1)  // packed signs: any bits are valid signs (C % 64 == 0)
    for (int64_t i = 0; i < x.nbytes(); ++i)
      static_cast<uint8_t*>(x.raw())[i] = c.fill ? (c.fill > 0 ? 0 : 0xff) : static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < x.numel() && xt != DType::b1; ++i) {
    const uint32_t r = rng();
    if (xt == DType::f32) {
      float v = std::ldexp(static_cast<float>(static_cast<int32_t>(r % 2001) - 1000), -static_cast<int>(r % 7));
      if (r % 13 == 0) v = (r & 64) ? 0.0f : -0.0f;
      if (c.fill) v = static_cast<float>(c.fill) * (1.0f + static_cast<float>(r % 5));
      x.data<float>()[i] = v;
    } else {
      int32_t v = static_cast<int32_t>(r % 256);
      if (r % 7 == 0) v = std::clamp(c.zp_x + static_cast<int32_t>(r % 3) - 1, 0, 255);
      if (c.fill) v = c.fill > 0 ? 255 : 0;
      x.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    }
  }
  Tensor w(DType::b1, {c.M, c.C, c.K, c.K});
  for (int64_t i = 0; i < w.numel(); ++i) store_code(w.raw(), DType::b1, i, rng() & 1 ? 1 : -1);
  QuantParams qw;
  qw.axis = 0;
  qw.code = DType::b1;
  for (int64_t m = 0; m < c.M; ++m) {
    qw.scale.push_back(0.01f * (1.0f + 0.37f * static_cast<float>(m % 5)));
    qw.zero_point.push_back(0);
  }
  const float K = static_cast<float>(c.C * c.K * c.K);
  const float s_y = 0.02f * std::sqrt(K) / 20.0f;  // typical outputs across the u8 range
  ValueId vx = g.add_value("x", xt, x.shape(), true);
  if (xt == DType::u8) g.value(vx).quant = QuantParams{{0.05f}, {c.zp_x}, -1};
  ValueId vw = g.add_constant("w", w);
  g.value(vw).quant = qw;
  std::vector<ValueId> ins = {vx, vw, kNoValue};
  b.inputs = {x, w, Tensor(), Tensor()};
  if (c.bias) {
    Tensor bt(DType::f32, {c.M});
    std::uniform_real_distribution<float> d(-40.0f * s_y, 40.0f * s_y);
    for (int64_t m = 0; m < c.M; ++m) bt.data<float>()[m] = d(rng);
    ins[2] = g.add_constant("b", bt);
    b.inputs[2] = bt;
  }
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{c.K, c.K});
  a.set("strides", std::vector<int64_t>{c.S, c.S});
  a.set("dilations", std::vector<int64_t>{c.D, c.D});
  a.set("pads", c.pads);
  a.set("pad_value", c.pad_value);
  if (c.relu) a.set("act_min", 0.0f);
  if (c.signs_out) a.set("out_signs", int64_t{1});
  // The output's domain: the input's, or with packed signs in, f32 or u8; packed signs out.
  const DType yt = c.signs_out ? DType::b1 : xt != DType::b1 ? xt : c.u8_out ? DType::u8 : DType::f32;
  const AxisGeometry gh = resolve_axis("NOTSET", c.H, c.K, c.S, c.D, c.pads[0], c.pads[2], false);
  const AxisGeometry gw = resolve_axis("NOTSET", c.W, c.K, c.S, c.D, c.pads[1], c.pads[3], false);
  const Shape ys = {c.N, c.M, gh.out, gw.out};
  if (c.residual) {
    Tensor r(yt, ys);
    for (int64_t i = 0; i < r.numel(); ++i) {
      if (yt == DType::f32) r.data<float>()[i] = static_cast<float>(static_cast<int32_t>(rng() % 201) - 100) * 0.01f;
      else r.data<uint8_t>()[i] = static_cast<uint8_t>(rng());
    }
    ValueId vr = g.add_value("r", yt, ys, true);
    if (yt == DType::u8) g.value(vr).quant = QuantParams{{s_y * 0.8f}, {90}, -1};
    ins.push_back(vr);
    b.inputs[3] = r;
  }
  ValueId vy = g.add_value("y", yt, ys, true);
  if (yt == DType::u8) g.value(vy).quant = QuantParams{{s_y}, {100}, -1};
  b.node = g.add_node("BinaryConv", "bconv", ins, {vy}, a);
  validate_node(g, g.nodes[static_cast<size_t>(b.node)]);
  return b;
}

std::vector<TensorView> views(const Built& b) {
  std::vector<TensorView> v;
  const size_t n = b.g.nodes[static_cast<size_t>(b.node)].inputs.size();
  for (size_t i = 0; i < n; ++i) v.push_back(b.inputs[i].empty() ? TensorView{} : b.inputs[i].view());
  return v;
}

// Channel counts around the 64-bit word, 1x1 / 3x3 / 5x5, strides 1 and 2, dilation, pads 0-2
// (asymmetric too) with zero- and one-padding, residual and ReLU epilogues, batch 2, u8 zero
// points at both ends, and all-+1 / all--1 inputs.
std::vector<BCase> cases() {
  std::vector<BCase> v;
  int i = 0;
  for (int64_t C : {1, 31, 33, 63, 65, 200})
    for (int64_t K : {1, 3, 5})
      for (int64_t S : {1, 2}) {
        BCase c;
        c.C = C, c.K = K, c.S = S;
        const int64_t P = K == 1 ? i % 2 : K / 2 + i % 2;
        c.pads = {P, P, P, P};
        c.pad_value = (i % 3) - 1;
        c.D = i % 5 == 4 ? 2 : 1;
        c.M = i % 3 == 0 ? 1 : i % 3 == 1 ? 5 : 13;
        c.H = 1 + (i * 5) % 9, c.W = 2 + (i * 7) % 11;
        c.residual = i % 2 == 1;
        c.relu = i % 4 == 2;
        c.bias = i % 7 != 3;
        c.N = i % 6 == 5 ? 2 : 1;
        c.zp_x = i % 8 == 0 ? 0 : i % 8 == 1 ? 255 : 97;
        if (c.H + 2 * P - c.D * (K - 1) - 1 >= 0 && c.W + 2 * P - c.D * (K - 1) - 1 >= 0) v.push_back(c);
        ++i;
      }
  for (int64_t pv : {0, 1, -1}) {
    BCase c;
    c.C = 65, c.H = 7, c.W = 6, c.M = 9;
    c.pads = {2, 0, 1, 2};
    c.pad_value = pv;
    v.push_back(c);
  }
  for (int fill : {1, -1}) {
    BCase c;
    c.C = 130, c.M = 17, c.fill = fill, c.residual = true;
    v.push_back(c);
  }
  BCase big;  // several pixel panels and row panels per thread
  big.C = 128, big.H = big.W = 14, big.M = 40, big.residual = true, big.relu = true;
  v.push_back(big);
  return v;
}

// Shapes packed signs take (C, M multiples of 64), with packed signs out; `packed_in` adds real
// outputs (f32 and u8) read from packed signs.
std::vector<BCase> packed_cases(bool packed_in) {
  std::vector<BCase> v;
  int i = 0;
  for (int64_t C : {64, 128, 192})
    for (int64_t K : {1, 3, 5})
      for (int64_t S : {1, 2}) {
        if (K == 5 && C > 64) continue;  // the reference's cost, not a kernel limit
        BCase c;
        c.C = C, c.K = K, c.S = S, c.M = i % 2 ? 64 : 128;
        const int64_t P = K == 1 ? i % 2 : K / 2 + i % 2;
        c.pads = {P, P, P, P};
        c.pad_value = (i % 3) - 1;
        c.H = 2 + (i * 5) % 6, c.W = 3 + (i * 7) % 6;
        c.N = i % 5 == 4 ? 2 : 1;
        c.zp_x = i % 4 == 0 ? 0 : 131;
        c.bias = i % 7 != 3;
        c.signs_out = !packed_in || i % 3 == 0;
        c.u8_out = !c.signs_out && i % 2 == 0;
        c.residual = !c.signs_out && i % 4 == 1;
        c.relu = !c.signs_out && i % 4 == 2;
        if (c.H + 2 * P - (K - 1) - 1 >= 0 && c.W + 2 * P - (K - 1) - 1 >= 0) v.push_back(c);
        ++i;
      }
  for (int fill : {1, -1}) {
    BCase c;
    c.C = 128, c.M = 64, c.fill = fill, c.signs_out = true;
    v.push_back(c);
  }
  BCase big;
  big.C = 128, big.H = big.W = 9, big.M = 192, big.signs_out = true;  // 3 row panels of 64 channels
  v.push_back(big);
  return v;
}

bool runs_on_host(const KernelCandidate& k) {
  const Target host = host_target();
  if (!k.create) return false;
  for (Feature f : k.features)
    if (!host.has(f)) return false;
  return true;
}

// Every BinaryConv row this build has and this CPU runs, against the reference: bit-identical
// outputs (the f32 epilogue is fmaf(D, alpha, bias) + residual in both), 1 and 2 threads, twice.
TEST(BinaryConvKernels, EveryRowMatchesTheReferenceBitForBit) {
  int rows = 0;
  for (const KernelCandidate* kc : candidates_for("BinaryConv")) {
    if (kc->name.starts_with("reference")) continue;
    if (!runs_on_host(*kc)) {
      std::printf("  %s: not run on this CPU (AVX-512 through SIMDe, NEON under qemu)\n", kc->name.c_str());
      continue;
    }
    const DType xt = kc->name.starts_with("f32") ? DType::f32 : kc->name.starts_with("qu8") ? DType::u8 : DType::b1;
    int applied = 0;
    uint32_t seed = 1;
    std::vector<BCase> all = xt == DType::b1 ? std::vector<BCase>{} : cases();
    for (const BCase& c : packed_cases(xt == DType::b1)) all.push_back(c);
    for (const BCase& c : all) {
      const Built b = build(c, xt, seed++);
      const Node& n = b.g.nodes[static_cast<size_t>(b.node)];
      NodeContext ctx{b.g, n, host_target(), 2};
      ASSERT_EQ(candidate_rejection(*kc, ctx), "") << kc->name << " " << c.str();
      const Value& yv = b.g.value(n.outputs[0]);
      const Shape& ys = yv.shape;
      Tensor ref(yv.dtype, ys);
      std::vector<TensorView> in = views(b), rout = {ref.view()};
      find_reference("BinaryConv")(b.g, n, in, rout);
      std::unique_ptr<Kernel> k = kc->create(ctx);
      for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        for (int rep = 0; rep < 2; ++rep) {
          Tensor y(yv.dtype, ys);
          std::memset(y.raw(), 0xA5, static_cast<size_t>(y.nbytes()));
          std::vector<TensorView> out = {y.view()};
          k->run(in, out, pool);
          ASSERT_EQ(std::memcmp(y.raw(), ref.raw(), static_cast<size_t>(y.nbytes())), 0)
              << kc->name << " " << c.str() << " threads " << threads;
        }
      }
      ++applied;
    }
    EXPECT_GT(applied, 15) << kc->name;
    ++rows;
  }
  EXPECT_GE(rows, 6);  // f32, u8 and packed signs: the portable rows and at least one SIMD set each
}

// MaxPool of packed signs: the AND of words against the reference (which unpacks, pools +-1 as
// int8 and packs), over windows, strides, pads, dilation and odd maps, 1 and 2 threads.
TEST(BinaryConvKernels, MaxPoolOfPackedSignsMatchesTheReference) {
  std::mt19937 rng(3);
  int ran = 0;
  struct P { int64_t C, H, W, K, S, pad, D; };
  for (const P& q : {P{64, 7, 9, 3, 2, 1, 1}, P{128, 8, 8, 2, 2, 0, 1}, P{192, 5, 6, 3, 1, 1, 1}, P{64, 9, 7, 3, 1, 2, 2},
                     P{64, 1, 1, 1, 1, 0, 1}}) {
    Graph g;
    Tensor x(DType::b1, {2, q.C, q.H, q.W});
    for (int64_t i = 0; i < x.nbytes(); ++i) static_cast<uint8_t*>(x.raw())[i] = static_cast<uint8_t>(rng() | rng());
    ValueId vx = g.add_value("x", DType::b1, x.shape(), true);
    ValueId vy = g.add_value("y");
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{q.K, q.K});
    a.set("strides", std::vector<int64_t>{q.S, q.S});
    a.set("pads", std::vector<int64_t>{q.pad, q.pad, q.pad, q.pad});
    a.set("dilations", std::vector<int64_t>{q.D, q.D});
    NodeId id = g.add_node("MaxPool", "pool", {vx}, {vy}, a);
    Node& n = g.nodes[static_cast<size_t>(id)];
    validate_node(g, n);
    const Value& yv = g.value(vy);
    ASSERT_EQ(yv.dtype, DType::b1);
    Tensor ref(DType::b1, yv.shape);
    std::vector<TensorView> in = {x.view()}, rout = {ref.view()};
    find_reference("MaxPool")(g, n, in, rout);
    NodeContext ctx{g, n, host_target(), 2};
    const Choice ch = select_kernel(ctx);
    ASSERT_EQ(ch.chosen->name, "qb1-maxpool2d-nhwc-and");
    std::unique_ptr<Kernel> k = ch.chosen->create(ctx);
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      Tensor y(DType::b1, yv.shape);
      std::vector<TensorView> out = {y.view()};
      k->run(in, out, pool);
      ASSERT_EQ(std::memcmp(y.raw(), ref.raw(), static_cast<size_t>(y.nbytes())), 0) << q.C << " " << q.K;
    }
    ++ran;
  }
  EXPECT_EQ(ran, 5);
}

// The reference itself, on one tiny case worked by hand: x = [1, -2, 0] (signs +1, -1, +1: 0 is
// +1), w = [-1, -1, +1], alpha 0.5, bias 0.25: D = -1 + 1 + 1 = 1, y = 0.5 * 1 + 0.25 = 0.75.
TEST(BinaryConvKernels, ReferenceByHand) {
  Graph g;
  Tensor x(DType::f32, {1, 3, 1, 1});
  x.data<float>()[0] = 1.0f, x.data<float>()[1] = -2.0f, x.data<float>()[2] = 0.0f;
  Tensor w(DType::b1, {1, 3, 1, 1});
  store_code(w.raw(), DType::b1, 0, -1);
  store_code(w.raw(), DType::b1, 1, -1);
  store_code(w.raw(), DType::b1, 2, 1);
  Tensor bias(DType::f32, {1});
  bias.data<float>()[0] = 0.25f;
  ValueId vx = g.add_value("x", DType::f32, x.shape(), true);
  ValueId vw = g.add_constant("w", w);
  g.value(vw).quant = QuantParams{{0.5f}, {0}, 0};
  g.value(vw).quant->code = DType::b1;
  ValueId vb = g.add_constant("b", bias);
  ValueId vy = g.add_value("y", DType::f32, {1, 1, 1, 1}, true);
  Attributes a;
  a.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  NodeId id = g.add_node("BinaryConv", "b", {vx, vw, vb}, {vy}, a);
  validate_node(g, g.nodes[static_cast<size_t>(id)]);
  Tensor y(DType::f32, {1, 1, 1, 1});
  std::vector<TensorView> in = {x.view(), w.view(), bias.view()}, out = {y.view()};
  find_reference("BinaryConv")(g, g.nodes[static_cast<size_t>(id)], in, out);
  EXPECT_EQ(y.data<float>()[0], 0.75f);
}

// ---- the binarize pass ----

// A small binary net as training frameworks export it: stem conv, then per block
// Sign -> Conv(+-alpha) -> BN -> Add(shortcut), the weights in one of the exported forms.
enum class WeightForm { constant_pm_alpha, sign_of_latent, bipolar_quant };

// Small seeded graphs of ONNX-style nodes for the pass tests.
struct NetBuilder {
  Graph g;
  std::mt19937 rng;
  std::normal_distribution<float> nd{0.0f, 1.0f};
  NetBuilder(const std::string& name, uint32_t seed) : rng(seed) { g.name = name; }
  Tensor tensor(Shape s, float scale, float offset = 0.0f) {
    Tensor t(DType::f32, std::move(s));
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = offset + scale * nd(rng);
    return t;
  }
  ValueId scalar(float v) {
    Tensor t(DType::f32, {});
    t.data<float>()[0] = v;
    return g.add_constant(g.unique_name("s"), t);
  }
  ValueId node(const std::string& op, std::vector<ValueId> in, Attributes a = {}) {
    ValueId y = g.add_value(g.unique_name(op + "_out"));
    g.add_node(op, g.unique_name(op), std::move(in), {y}, std::move(a));
    return y;
  }
  static Attributes window(int64_t k, int64_t s, int64_t p) {
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{k, k});
    a.set("strides", std::vector<int64_t>{s, s});
    a.set("pads", std::vector<int64_t>{p, p, p, p});
    return a;
  }
  ValueId input(Shape shape) {
    ValueId x = g.add_value("input", DType::f32, std::move(shape), true);
    g.inputs.push_back(x);
    return x;
  }
  Graph finish(ValueId out, Shape shape) {
    g.value(out).shape = std::move(shape);
    g.value(out).shape_known = true;
    g.outputs.push_back(out);
    return std::move(g);
  }
};

Graph binary_net(WeightForm form, bool bipolar_act, uint32_t seed, bool where_act = false) {
  NetBuilder b("binary_net", seed);
  Graph& g = b.g;
  auto tensor = [&](Shape sh, float scale, float offset = 0.0f) { return b.tensor(std::move(sh), scale, offset); };
  auto scalar = [&](float v) { return b.scalar(v); };
  auto node = [&](const std::string& op, std::vector<ValueId> in, Attributes a = {}) {
    return b.node(op, std::move(in), std::move(a));
  };
  auto conv_attrs = NetBuilder::window;
  ValueId x = b.input({1, 3, 20, 18});
  ValueId h = node("Conv", {x, g.add_constant("stem.w", tensor({48, 3, 3, 3}, 0.3f))}, conv_attrs(3, 1, 1));
  int64_t C = 48;
  for (int blk = 0; blk < 3; ++blk) {
    const int64_t M = blk == 2 ? 40 : 48, stride = blk == 1 ? 2 : 1;
    // Where(x < 0, -1, 1) is the form lowbit's QDQ export writes (sign with 0 -> +1).
    ValueId s = bipolar_act ? node("BipolarQuant", {h, scalar(0.5f)})
                : where_act ? node("Where", {node("Less", {h, scalar(0.0f)}), scalar(-1.0f), scalar(1.0f)})
                            : node("Sign", {h});
    Tensor latent = tensor({M, C, 3, 3}, 1.0f);
    ValueId w;
    if (form == WeightForm::constant_pm_alpha) {
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < C * 9; ++k) {
          float& v = latent.data<float>()[m * C * 9 + k];
          v = v < 0 ? -0.05f * static_cast<float>(m + 1) : 0.05f * static_cast<float>(m + 1);
        }
      w = g.add_constant(g.unique_name("w"), latent);
    } else if (form == WeightForm::sign_of_latent) {
      w = node("Sign", {g.add_constant(g.unique_name("latent"), latent)});
    } else {
      w = node("BipolarQuant", {g.add_constant(g.unique_name("latent"), latent), scalar(0.03f)});
    }
    ValueId y = node("Conv", {s, w}, conv_attrs(3, stride, 1));
    Attributes bn;
    bn.set("epsilon", 1e-5f);
    // A negative gamma on some channels: the fold moves the sign into the b1 codes.
    Tensor gamma = tensor({M}, 0.3f, 0.8f);
    gamma.data<float>()[1] = -0.7f;
    y = node("BatchNormalization", {y, g.add_constant(g.unique_name("g"), gamma),
                                    g.add_constant(g.unique_name("b"), tensor({M}, 0.1f)),
                                    g.add_constant(g.unique_name("m"), tensor({M}, 0.1f)),
                                    g.add_constant(g.unique_name("v"), tensor({M}, 0.1f, 1.0f))},
             bn);
    ValueId sc = h;
    if (stride != 1 || M != C) {
      Attributes ap;
      ap.set("kernel_shape", std::vector<int64_t>{2, 2});
      ap.set("strides", std::vector<int64_t>{stride, stride});
      if (stride != 1) sc = node("AveragePool", {h}, ap);
      sc = node("Conv", {sc, g.add_constant(g.unique_name("ds"), tensor({M, C, 1, 1}, 0.2f))}, conv_attrs(1, 1, 0));
    }
    h = node("Add", {y, sc});
    C = M;
  }
  return b.finish(node("GlobalAveragePool", {h}), {1, C, 1, 1});
}

int count_op(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op == op;
  return n;
}

double max_rel_diff(const Tensor& a, const Tensor& b) {
  double m = 0, scale = 0;
  for (int64_t i = 0; i < a.numel(); ++i) scale = std::max(scale, std::fabs(double(b.data<float>()[i])));
  for (int64_t i = 0; i < a.numel(); ++i)
    m = std::max(m, std::fabs(double(a.data<float>()[i]) - double(b.data<float>()[i])) / scale);
  return m;
}

// Each exported form becomes three BinaryConv nodes on a fast row (BN folded, residuals fused) and
// computes what the unoptimized graph computes with ONNX semantics (Sign and fp32 Conv, reference
// kernels), to float rounding: the inputs have no exact zeros, so Sign(0) never differs.
TEST(Binarize, ExportedFormsBecomeBinaryConvAndKeepOnnxSemantics) {
  for (auto [form, bipolar, where] :
       {std::tuple{WeightForm::constant_pm_alpha, false, false}, {WeightForm::sign_of_latent, false, false},
        {WeightForm::bipolar_quant, true, false}, {WeightForm::sign_of_latent, true, false},
        {WeightForm::constant_pm_alpha, false, true}}) {
    CompileOptions o;
    o.threads = 2;
    auto fast = CompiledModel::compile(binary_net(form, bipolar, 5, where), o);
    EXPECT_EQ(count_op(fast->graph(), "BinaryConv"), 3) << int(form) << bipolar << where;
    EXPECT_EQ(count_op(fast->graph(), "Sign") + count_op(fast->graph(), "BipolarQuant") +
                  count_op(fast->graph(), "Where"),
              0);
    // Every Add fused into a conv's epilogue (the BinaryConv's, or the later 1x1 shortcut conv's).
    EXPECT_EQ(count_op(fast->graph(), "Add"), 0);
    for (const Step& s : fast->steps())
      if (fast->graph().nodes[static_cast<size_t>(s.node)].op == "BinaryConv") {
        EXPECT_TRUE(s.choice.chosen->name.starts_with("f32-qb1w-conv2d-xnor-")) << s.choice.chosen->name;
      }
    CompileOptions plain = o;
    plain.optimize = false;
    auto onnx = CompiledModel::compile(binary_net(form, bipolar, 5, where), plain);
    EXPECT_EQ(count_op(onnx->graph(), "BinaryConv"), 0);
    const std::vector<Tensor> x = synthetic_inputs(fast->graph(), 3);
    const Tensor a = fast->run(x)[0], b = onnx->run(x)[0];
    EXPECT_LT(max_rel_diff(a, b), 1e-4) << int(form) << bipolar << where;
  }
}

// What does not qualify stays a Conv: weights with two magnitudes in a channel, a grouped conv,
// a Sign that is not followed by a conv's input.
TEST(Binarize, NonBinaryWeightsAndGroupedConvsStayConv) {
  Graph g = binary_net(WeightForm::constant_pm_alpha, false, 7);
  for (Node& n : g.nodes)
    if (n.op == "Conv" && n.inputs[0] != g.inputs[0]) {
      Tensor* w = g.value(n.inputs[1]).constant ? &*g.value(n.inputs[1]).constant : nullptr;
      if (w && w->shape()[2] == 3) {
        w->data<float>()[5] *= 1.5f;  // channel 0 now has two magnitudes
        break;
      }
    }
  CompileOptions o;
  auto m = CompiledModel::compile(std::move(g), o);
  EXPECT_EQ(count_op(m->graph(), "BinaryConv"), 2);
  EXPECT_EQ(count_op(m->graph(), "Sign"), 1);
}

// An XNOR-Net-style chain, where a binary conv's output is read only through signs: stem, then
// Sign -> Conv -> BN -> MaxPool -> Sign -> Conv -> BN -> Sign -> Conv -> BN -> Relu -> pool.
Graph xnor_net(uint32_t seed) {
  NetBuilder nb("xnor_net", seed);
  Graph& g = nb.g;
  auto tensor = [&](Shape sh, float scale, float offset = 0.0f) { return nb.tensor(std::move(sh), scale, offset); };
  auto node = [&](const std::string& op, std::vector<ValueId> in, Attributes a = {}) {
    return nb.node(op, std::move(in), std::move(a));
  };
  auto window = NetBuilder::window;
  auto bn = [&](ValueId x, int64_t M) {
    Attributes a;
    a.set("epsilon", 1e-5f);
    return node("BatchNormalization", {x, g.add_constant(g.unique_name("g"), tensor({M}, 0.3f, 0.8f)),
                                       g.add_constant(g.unique_name("b"), tensor({M}, 0.2f)),
                                       g.add_constant(g.unique_name("m"), tensor({M}, 0.1f)),
                                       g.add_constant(g.unique_name("v"), tensor({M}, 0.1f, 1.0f))},
                a);
  };
  auto binary = [&](ValueId x, int64_t C, int64_t M) {
    Tensor w = tensor({M, C, 3, 3}, 1.0f);
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = w.data<float>()[i] < 0 ? -0.04f : 0.04f;
    return bn(node("Conv", {node("Sign", {x}), g.add_constant(g.unique_name("w"), w)}, window(3, 1, 1)), M);
  };
  ValueId x = nb.input({1, 3, 16, 14});
  ValueId h = bn(node("Conv", {x, g.add_constant("stem.w", tensor({64, 3, 3, 3}, 0.3f))}, window(3, 1, 1)), 64);
  h = node("MaxPool", {binary(h, 64, 64)}, window(2, 2, 0));
  h = binary(binary(h, 64, 128), 128, 128);
  return nb.finish(node("GlobalAveragePool", {node("Relu", {h})}), {1, 128, 1, 1});
}

std::string chosen(const CompiledModel& m, const std::string& op, int i) {
  int k = 0;
  for (const Step& s : m.steps())
    if (m.graph().nodes[static_cast<size_t>(s.node)].op == op && k++ == i) return s.choice.chosen->name;
  return "";
}

double cosine(const Tensor& a, const Tensor& b);

// The chain keeps its activations packed: the first binary conv and the second write packed signs
// (a threshold per channel), the max pool ANDs words, the second and third read bits; in fp32 and
// int8, and equal to the graph run with ONNX semantics.
TEST(Binarize, XnorChainKeepsActivationsPackedBetweenBinaryLayers) {
  CompileOptions o;
  o.threads = 2;
  auto fp32 = CompiledModel::compile(xnor_net(9), o);
  int packed = 0;
  for (const Value& v : fp32->graph().values) packed += !v.constant && v.dtype == DType::b1;
  EXPECT_EQ(packed, 3);  // conv 1's output, the pooled signs, conv 2's output
  EXPECT_TRUE(chosen(*fp32, "BinaryConv", 0).starts_with("f32-qb1w-"));
  EXPECT_TRUE(chosen(*fp32, "BinaryConv", 1).starts_with("qb1-qb1w-"));
  EXPECT_TRUE(chosen(*fp32, "BinaryConv", 2).starts_with("qb1-qb1w-"));
  EXPECT_EQ(chosen(*fp32, "MaxPool", 0), "qb1-maxpool2d-nhwc-and");
  CompileOptions plain = o;
  plain.optimize = false;
  const std::vector<Tensor> x = synthetic_inputs(fp32->graph(), 4);
  const Tensor y = fp32->run(x)[0];
  EXPECT_GT(cosine(y, CompiledModel::compile(xnor_net(9), plain)->run(x)[0]), 0.9999);

  QuantizeOptions q;
  q.synthetic_samples = 2;
  q.precision = parse_precision("int8");
  QuantizedBuild b = build_quantized(*fp32, o, q, SlowPolicy::fp32);
  EXPECT_TRUE(chosen(*b.model, "BinaryConv", 0).starts_with("qu8-qb1w-"));
  EXPECT_TRUE(chosen(*b.model, "BinaryConv", 1).starts_with("qb1-qb1w-"));
  EXPECT_EQ(chosen(*b.model, "MaxPool", 0), "qb1-maxpool2d-nhwc-and");
  const Tensor y8 = b.model->run(x)[0];
  EXPECT_GT(cosine(y8, y), 0.99);
  const std::string path = (std::filesystem::temp_directory_path() / "lowbit_xnor_net.lbm").string();
  save_artifact(path, b.graph);
  const Tensor yr = CompiledModel::compile(load_artifact(path).graph, o)->run(x)[0];
  std::filesystem::remove(path);
  EXPECT_EQ(std::memcmp(yr.raw(), y8.raw(), static_cast<size_t>(y8.nbytes())), 0);
}

// ---- resnet18-binary ----

double cosine(const Tensor& a, const Tensor& b) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    ab += x * y, aa += x * x, bb += y * y;
  }
  return ab / std::sqrt(aa * bb);
}

int rows_starting(const CompiledModel& m, const std::string& prefix) {
  int n = 0;
  for (const Step& s : m.steps()) n += s.choice.chosen->name.starts_with(prefix);
  return n;
}

TEST(Resnet18Binary, SixteenBinaryConvsInFp32AndInt8AndFromAnArtifact) {
  CompileOptions o;
  o.threads = 2;
  // Built once (11M seeded weights take a while under qemu and the sanitizers).
  const Graph src = build_zoo_model("resnet18-binary");
  auto fp32 = CompiledModel::compile(src, o);
  EXPECT_EQ(count_op(fp32->graph(), "BinaryConv"), 16);
  EXPECT_EQ(rows_starting(*fp32, "f32-qb1w-"), 16);
  const std::vector<Tensor> x = synthetic_inputs(fp32->graph(), 11);
  const Tensor y32 = fp32->run(x)[0];
  // ONNX semantics (no pass: Sign and fp32 convs on the reference kernels) agree to float rounding.
  CompileOptions plain = o;
  plain.optimize = false;
  const Tensor yonnx = CompiledModel::compile(src, plain)->run(x)[0];
  EXPECT_GT(cosine(y32, yonnx), 0.9999);

  QuantizeOptions q;
  q.synthetic_samples = 2;
  q.precision = parse_precision("int8");
  QuantizedBuild b = build_quantized(*fp32, o, q, SlowPolicy::fp32);
  EXPECT_EQ(rows_starting(*b.model, "qu8-qb1w-"), 16);
  EXPECT_TRUE(b.slow.empty());
  const Tensor y8 = b.model->run(x)[0];
  EXPECT_GT(cosine(y8, y32), 0.98);

  // Weights: b1 in the artifact, >= 15x smaller than the same network in fp32 (ResNet-18's
  // parameter count: the same convs, Bi-Real adds no weights).
  int64_t bytes = 0, fp32_bytes = 0;
  for (const Value& v : b.model->graph().values)
    if (v.constant) bytes += v.constant->nbytes();
  for (const Value& v : src.values)
    if (v.constant) fp32_bytes += v.constant->nbytes();
  EXPECT_GT(double(fp32_bytes) / double(bytes), 15.0) << bytes << " vs " << fp32_bytes;

  const std::string path = (std::filesystem::temp_directory_path() / "lowbit_resnet18_binary.lbm").string();
  save_artifact(path, b.graph);
  auto reloaded = CompiledModel::compile(load_artifact(path).graph, o);
  std::filesystem::remove(path);
  const Tensor yr = reloaded->run(x)[0];
  EXPECT_EQ(std::memcmp(yr.raw(), y8.raw(), static_cast<size_t>(y8.nbytes())), 0);

#if defined(__x86_64__) && defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
  // The portable rows (sse41 target) give the same bytes as the host's SIMD rows.
  CompileOptions portable = o;
  portable.target = parse_target("x86-64");
  auto p = CompiledModel::compile(b.graph, portable);
  EXPECT_EQ(rows_starting(*p, "qu8-qb1w-conv2d-xnor-2x4-scalar"), 16);
  const Tensor yp = p->run(x)[0];
  EXPECT_EQ(std::memcmp(yp.raw(), y8.raw(), static_cast<size_t>(y8.nbytes())), 0);
#endif
}

}  // namespace
}  // namespace lowbit
