// Imported binary models: the BinaryConv op (sign of a real-valued input, b1 weights times alpha)
// on every dispatch row against its reference, the binarize pass's patterns (Sign, BipolarQuant,
// BN folded in, Sign(W) weights) against the same graph run with ONNX semantics, and the
// resnet18-binary zoo model in fp32, int8 and from an artifact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

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
  std::string str() const {
    return "N" + std::to_string(N) + " C" + std::to_string(C) + " " + std::to_string(H) + "x" + std::to_string(W) +
           " M" + std::to_string(M) + " k" + std::to_string(K) + " s" + std::to_string(S) + " d" + std::to_string(D) +
           " pad " + std::to_string(pads[0]) + "," + std::to_string(pads[1]) + "," + std::to_string(pads[2]) + "," +
           std::to_string(pads[3]) + " pad_value " + std::to_string(pad_value) + (residual ? " residual" : "") +
           (relu ? " relu" : "") + " zp " + std::to_string(zp_x) + " fill " + std::to_string(fill);
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
  for (int64_t i = 0; i < x.numel(); ++i) {
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
  const AxisGeometry gh = resolve_axis("NOTSET", c.H, c.K, c.S, c.D, c.pads[0], c.pads[2], false);
  const AxisGeometry gw = resolve_axis("NOTSET", c.W, c.K, c.S, c.D, c.pads[1], c.pads[3], false);
  const Shape ys = {c.N, c.M, gh.out, gw.out};
  if (c.residual) {
    Tensor r(xt, ys);
    for (int64_t i = 0; i < r.numel(); ++i) {
      if (xt == DType::f32) r.data<float>()[i] = static_cast<float>(static_cast<int32_t>(rng() % 201) - 100) * 0.01f;
      else r.data<uint8_t>()[i] = static_cast<uint8_t>(rng());
    }
    ValueId vr = g.add_value("r", xt, ys, true);
    if (xt == DType::u8) g.value(vr).quant = QuantParams{{s_y * 0.8f}, {90}, -1};
    ins.push_back(vr);
    b.inputs[3] = r;
  }
  ValueId vy = g.add_value("y", xt, ys, true);
  if (xt == DType::u8) g.value(vy).quant = QuantParams{{s_y}, {100}, -1};
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
    const DType xt = kc->name.starts_with("f32") ? DType::f32 : DType::u8;
    int applied = 0;
    uint32_t seed = 1;
    for (const BCase& c : cases()) {
      const Built b = build(c, xt, seed++);
      const Node& n = b.g.nodes[static_cast<size_t>(b.node)];
      NodeContext ctx{b.g, n, host_target(), 2};
      ASSERT_EQ(candidate_rejection(*kc, ctx), "") << kc->name << " " << c.str();
      const Shape& ys = b.g.value(n.outputs[0]).shape;
      Tensor ref(xt, ys);
      std::vector<TensorView> in = views(b), rout = {ref.view()};
      find_reference("BinaryConv")(b.g, n, in, rout);
      std::unique_ptr<Kernel> k = kc->create(ctx);
      for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        for (int rep = 0; rep < 2; ++rep) {
          Tensor y(xt, ys);
          std::memset(y.raw(), 0xA5, static_cast<size_t>(y.nbytes()));
          std::vector<TensorView> out = {y.view()};
          k->run(in, out, pool);
          ASSERT_EQ(std::memcmp(y.raw(), ref.raw(), static_cast<size_t>(y.nbytes())), 0)
              << kc->name << " " << c.str() << " threads " << threads;
        }
      }
      ++applied;
    }
    EXPECT_GT(applied, 30) << kc->name;
    ++rows;
  }
  EXPECT_GE(rows, 4);  // f32 and u8, the portable rows and at least one SIMD set each
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

Graph binary_net(WeightForm form, bool bipolar_act, uint32_t seed) {
  Graph g;
  g.name = "binary_net";
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto tensor = [&](Shape s, float scale, float offset = 0.0f) {
    Tensor t(DType::f32, std::move(s));
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = offset + scale * nd(rng);
    return t;
  };
  auto scalar = [&](float v) {
    Tensor t(DType::f32, {});
    t.data<float>()[0] = v;
    return g.add_constant(g.unique_name("s"), t);
  };
  auto node = [&](const std::string& op, std::vector<ValueId> in, Attributes a = {}) {
    ValueId y = g.add_value(g.unique_name(op + "_out"));
    g.add_node(op, g.unique_name(op), std::move(in), {y}, std::move(a));
    return y;
  };
  auto conv_attrs = [](int64_t k, int64_t s, int64_t p) {
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{k, k});
    a.set("strides", std::vector<int64_t>{s, s});
    a.set("pads", std::vector<int64_t>{p, p, p, p});
    return a;
  };
  ValueId x = g.add_value("input", DType::f32, {1, 3, 20, 18}, true);
  g.inputs.push_back(x);
  ValueId h = node("Conv", {x, g.add_constant("stem.w", tensor({48, 3, 3, 3}, 0.3f))}, conv_attrs(3, 1, 1));
  int64_t C = 48;
  for (int blk = 0; blk < 3; ++blk) {
    const int64_t M = blk == 2 ? 40 : 48, stride = blk == 1 ? 2 : 1;
    ValueId s = bipolar_act ? node("BipolarQuant", {h, scalar(0.5f)}) : node("Sign", {h});
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
  ValueId out = node("GlobalAveragePool", {h});
  g.value(out).shape = {1, C, 1, 1};
  g.value(out).shape_known = true;
  g.outputs.push_back(out);
  return g;
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
  for (auto [form, bipolar] : {std::pair{WeightForm::constant_pm_alpha, false}, {WeightForm::sign_of_latent, false},
                               {WeightForm::bipolar_quant, true}, {WeightForm::sign_of_latent, true}}) {
    CompileOptions o;
    o.threads = 2;
    auto fast = CompiledModel::compile(binary_net(form, bipolar, 5), o);
    EXPECT_EQ(count_op(fast->graph(), "BinaryConv"), 3) << int(form) << bipolar;
    EXPECT_EQ(count_op(fast->graph(), "Sign") + count_op(fast->graph(), "BipolarQuant"), 0);
    // Every Add fused into a conv's epilogue (the BinaryConv's, or the later 1x1 shortcut conv's).
    EXPECT_EQ(count_op(fast->graph(), "Add"), 0);
    for (const Step& s : fast->steps())
      if (fast->graph().nodes[static_cast<size_t>(s.node)].op == "BinaryConv") {
        EXPECT_TRUE(s.choice.chosen->name.starts_with("f32-qb1w-conv2d-xnor-")) << s.choice.chosen->name;
      }
    CompileOptions plain = o;
    plain.optimize = false;
    auto onnx = CompiledModel::compile(binary_net(form, bipolar, 5), plain);
    EXPECT_EQ(count_op(onnx->graph(), "BinaryConv"), 0);
    const std::vector<Tensor> x = synthetic_inputs(fast->graph(), 3);
    const Tensor a = fast->run(x)[0], b = onnx->run(x)[0];
    EXPECT_LT(max_rel_diff(a, b), 1e-4) << int(form) << bipolar;
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
  auto fp32 = CompiledModel::compile(build_zoo_model("resnet18-binary"), o);
  EXPECT_EQ(count_op(fp32->graph(), "BinaryConv"), 16);
  EXPECT_EQ(rows_starting(*fp32, "f32-qb1w-"), 16);
  const std::vector<Tensor> x = synthetic_inputs(fp32->graph(), 11);
  const Tensor y32 = fp32->run(x)[0];
  // ONNX semantics (no pass: Sign and fp32 convs on the reference kernels) agree to float rounding.
  CompileOptions plain = o;
  plain.optimize = false;
  const Tensor yonnx = CompiledModel::compile(build_zoo_model("resnet18-binary"), plain)->run(x)[0];
  EXPECT_GT(cosine(y32, yonnx), 0.9999);

  QuantizeOptions q;
  q.synthetic_samples = 2;
  q.precision = parse_precision("int8");
  QuantizedBuild b = build_quantized(*fp32, o, q, SlowPolicy::fp32);
  EXPECT_EQ(rows_starting(*b.model, "qu8-qb1w-"), 16);
  EXPECT_TRUE(b.slow.empty());
  const Tensor y8 = b.model->run(x)[0];
  EXPECT_GT(cosine(y8, y32), 0.98);

  // Weights: b1 in the artifact, >= 15x smaller than fp32 ResNet-18's.
  int64_t bytes = 0, fp32_bytes = 0;
  for (const Value& v : b.model->graph().values)
    if (v.constant) bytes += v.constant->nbytes();
  for (const Value& v : build_zoo_model("resnet18").values)
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
