// quant/rounding.h: GPTQ rounding of weight codes. The stats against an im2col written here
// for clarity, the walk's error bookkeeping against dW^T H dW computed here from the codes the
// quantized graph holds, every layer it touches against round-to-nearest, held-out accuracy, and
// determinism over thread counts and repeated builds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>
#include <cstring>

#include "lowbit/api/build.h"
#include "lowbit/api/compare.h"
#include "lowbit/api/options.h"
#include "lowbit/artifact/artifact.h"
#include "lowbit/common/error.h"
#include "lowbit/ir/codes.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/quant/guard.h"
#include "lowbit/quant/quantize.h"
#include "lowbit/quant/rounding.h"
#include "small_models.h"
#include "test_tensors.h"

namespace lowbit {
namespace {

using ::testing::HasSubstr;

using testutil::normal_tensor;

// Inputs like a network's: channels that move together (one field shared by all channels, plus a
// little noise of their own). With independent inputs (H a multiple of the identity) there is
// nothing for the rounding to exploit.
Tensor correlated_input(uint64_t seed) {
  Tensor field = normal_tensor({7, 9}, seed), t = normal_tensor({2, 4, 7, 9}, seed + 1000, 0.3f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] += field.data<float>()[i % 63];
  return t;
}

// x [2, 4, 7, 9] -> Conv (6 out, 2 groups, 3 x 3, strides 2 x 1, dilations 1 x 2, pads 1,0,1,2)
// -> Flatten -> Gemm (5 out).
struct OddLayers {
  Graph g;
  int64_t OH = 0, OW = 0;
  OddLayers() {
    ValueId x = g.add_value("x", DType::f32, {2, 4, 7, 9}, true);
    g.inputs.push_back(x);
    ValueId c = g.add_value("c"), f = g.add_value("f"), y = g.add_value("y");
    Attributes a;
    a.set("group", int64_t{2});
    a.set("strides", std::vector<int64_t>{2, 1});
    a.set("dilations", std::vector<int64_t>{1, 2});
    a.set("pads", std::vector<int64_t>{1, 0, 1, 2});
    g.add_node("Conv", "conv", {x, g.add_constant("w", normal_tensor({6, 2, 3, 3}, 1))}, {c}, a);
    g.add_node("Flatten", "flatten", {c}, {f});
    OH = (7 + 2 - 3) / 2 + 1, OW = (9 + 2 - 5) / 1 + 1;
    Attributes ga;
    ga.set("transB", int64_t{1});
    g.add_node("Gemm", "fc", {f, g.add_constant("wf", normal_tensor({5, 6 * OH * OW}, 2))}, {y}, ga);
    g.outputs.push_back(y);
    validate(g);
  }
};

std::unique_ptr<CompiledModel> compile_plain(const Graph& g) {
  CompileOptions o;
  o.optimize = false;
  o.threads = 1;
  return CompiledModel::compile(g, o);
}

TEST(Rounding, StatsAreTheSecondMomentsOfEveryPatch) {
  OddLayers m;
  ASSERT_EQ(m.g.value(m.g.nodes[0].outputs[0]).shape, (Shape{2, 6, m.OH, m.OW}));
  auto model = compile_plain(m.g);
  std::vector<std::vector<Tensor>> samples{{normal_tensor({2, 4, 7, 9}, 10)}, {normal_tensor({2, 4, 7, 9}, 11)}};
  const LayerInputs s = collect_layer_inputs(*model, samples, {"conv", "fc"}, 1 << 30);
  ASSERT_EQ(s.size(), 2u);
  // The conv: per group, the patch (c, kh, kw) of every output position, zero where it reads padding.
  const LayerInputStats& c = s.at("conv");
  ASSERT_EQ(c.groups, 2);
  ASSERT_EQ(c.K, 2 * 3 * 3);
  EXPECT_EQ(c.positions, 2 * 2 * m.OH * m.OW);
  std::vector<double> H(2 * 18 * 18, 0.0), sum(2 * 18, 0.0);
  for (const auto& smp : samples) {
    const float* x = smp[0].data<float>();
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t g = 0; g < 2; ++g)
        for (int64_t oh = 0; oh < m.OH; ++oh)
          for (int64_t ow = 0; ow < m.OW; ++ow) {
            double p[18];
            for (int64_t ci = 0; ci < 2; ++ci)
              for (int64_t kh = 0; kh < 3; ++kh)
                for (int64_t kw = 0; kw < 3; ++kw) {
                  const int64_t ih = oh * 2 - 1 + kh, iw = ow - 0 + kw * 2;
                  p[(ci * 3 + kh) * 3 + kw] =
                      ih >= 0 && ih < 7 && iw >= 0 && iw < 9 ? x[((n * 4 + g * 2 + ci) * 7 + ih) * 9 + iw] : 0.0;
                }
            for (int i = 0; i < 18; ++i) {
              sum[static_cast<size_t>(g * 18 + i)] += p[i];
              for (int j = 0; j < 18; ++j) H[static_cast<size_t>((g * 18 + i) * 18 + j)] += p[i] * p[j];
            }
          }
  }
  for (size_t i = 0; i < H.size(); ++i) ASSERT_NEAR(c.H[i], H[i], 1e-4 * (1 + std::fabs(H[i]))) << "conv H[" << i << "]";
  for (size_t i = 0; i < sum.size(); ++i) ASSERT_NEAR(c.sum[i], sum[i], 1e-4 * (1 + std::fabs(sum[i])));
  // The Gemm: its input rows (the flattened conv outputs) as they are.
  const LayerInputStats& f = s.at("fc");
  EXPECT_EQ(f.groups, 1);
  EXPECT_EQ(f.K, 6 * m.OH * m.OW);
  EXPECT_EQ(f.positions, 4);
  double diag = 0;
  for (const auto& smp : samples) {
    const Tensor out = model->run_observed(smp, [&](ValueId v, const TensorView& t) {
      if (m.g.value(v).name != "f") return;
      for (int64_t i = 0; i < t.numel(); ++i) diag += double(t.as<float>()[i]) * t.as<float>()[i];
    })[0];
  }
  double trace = 0;
  for (int64_t k = 0; k < f.K; ++k) trace += f.H[static_cast<size_t>(k * f.K + k)];
  EXPECT_NEAR(trace, diag, 1e-4 * diag);
}

TEST(Rounding, PositionsAreCappedAndSpreadOverTheSamples) {
  OddLayers m;
  auto model = compile_plain(m.g);
  std::vector<std::vector<Tensor>> samples;
  for (uint64_t i = 0; i < 3; ++i) samples.push_back({normal_tensor({2, 4, 7, 9}, 20 + i)});
  const LayerInputs s = collect_layer_inputs(*model, samples, {"conv"}, 10);
  EXPECT_EQ(s.at("conv").positions, 3 * 4);  // ceil(10 / 3) a sample
  EXPECT_THROW(collect_layer_inputs(*model, samples, {"flatten"}), Error);
}

// dW^T H dW summed over the rows, in double, with H from the stats.
double layer_error(const Tensor& w, const std::vector<float>& wq, const LayerInputStats& s) {
  const int64_t M = w.shape()[0], K = s.K, Mg = M / s.groups;
  double e = 0;
  for (int64_t m = 0; m < M; ++m) {
    const float* H = s.H.data() + m / Mg * K * K;
    for (int64_t i = 0; i < K; ++i) {
      const double di = double(w.data<float>()[m * K + i]) - wq[static_cast<size_t>(m * K + i)];
      for (int64_t j = 0; j < K; ++j)
        e += di * H[i * K + j] * (double(w.data<float>()[m * K + j]) - wq[static_cast<size_t>(m * K + j)]);
    }
  }
  return e;
}

std::vector<float> dequantized(const Tensor& codes, DType storage, const QuantParams& q, int64_t K) {
  std::vector<float> r(static_cast<size_t>(codes.numel()));
  for (int64_t i = 0; i < codes.numel(); ++i) r[static_cast<size_t>(i)] = float(load_code(codes.raw(), storage, i)) * q.scale[static_cast<size_t>(i / K)];
  return r;
}

TEST(Rounding, TheWalkLowersTheErrorItReportsAndKeepsNearestWhenItCannot) {
  OddLayers m;
  auto model = compile_plain(m.g);
  std::vector<std::vector<Tensor>> samples;
  for (uint64_t i = 0; i < 4; ++i) samples.push_back({correlated_input(30 + i)});
  const LayerInputs s = collect_layer_inputs(*model, samples, {"conv"});
  const LayerInputStats& st = s.at("conv");
  const Tensor& w = *m.g.constant(m.g.nodes[0].inputs[1]);
  for (DType code : {DType::i4, DType::i2}) {
    QuantParams q;
    const Tensor nearest = quantize_weights(w, code, WeightScale::mse, code, q);
    Tensor codes = nearest.clone();
    const RoundingOutcome r = round_weights_gptq(w, q, code, code, st, codes, 1);
    SCOPED_TRACE(dtype_name(code));
    ASSERT_TRUE(r.applied) << r.error << " vs nearest " << r.nearest_error;
    EXPECT_LT(r.error, r.nearest_error);
    // What it reports is dW^T H dW of what it wrote (and of the nearest codes).
    const double e_near = layer_error(w, dequantized(nearest, code, q, st.K), st);
    const double e_new = layer_error(w, dequantized(codes, code, q, st.K), st);
    EXPECT_NEAR(r.nearest_error, e_near, 1e-3 * e_near);
    EXPECT_NEAR(r.error, e_new, 1e-3 * e_near);
    // Bias correction: (W - W_q) times the patches' mean.
    const std::vector<float> wq = dequantized(codes, code, q, st.K);
    for (int64_t o = 0; o < 6; ++o) {
      double shift = 0;
      for (int64_t k = 0; k < st.K; ++k)
        shift += (double(w.data<float>()[o * st.K + k]) - wq[static_cast<size_t>(o * st.K + k)]) *
                 st.sum[static_cast<size_t>(o / 3 * st.K + k)] / double(st.positions);
      EXPECT_NEAR(r.bias_shift[static_cast<size_t>(o)], shift, 1e-5 + 1e-4 * std::fabs(shift));
    }
    // The same codes on any thread count.
    Tensor codes4 = nearest.clone();
    round_weights_gptq(w, q, code, code, st, codes4, 4);
    EXPECT_EQ(std::memcmp(codes.raw(), codes4.raw(), static_cast<size_t>(codes.nbytes())), 0);
  }
  // Uncorrelated inputs of one scale (H = I): no column can make up for another, the walk is
  // round-to-nearest, and the nearest codes stay.
  LayerInputStats eye = st;
  std::fill(eye.H.begin(), eye.H.end(), 0.0f);
  for (int64_t g = 0; g < eye.groups; ++g)
    for (int64_t k = 0; k < eye.K; ++k) eye.H[static_cast<size_t>((g * eye.K + k) * eye.K + k)] = 1.0f;
  QuantParams q;
  const Tensor nearest = quantize_weights(w, DType::i4, WeightScale::mse, DType::i4, q);
  Tensor codes = nearest.clone();
  const RoundingOutcome r = round_weights_gptq(w, q, DType::i4, DType::i4, eye, codes);
  EXPECT_FALSE(r.applied);
  EXPECT_EQ(std::memcmp(codes.raw(), nearest.raw(), static_cast<size_t>(codes.nbytes())), 0);
  // Stats of another layer are refused.
  EXPECT_THROW(round_weights_gptq(normal_tensor({6, 3, 3, 3}, 3), q, DType::i4, DType::i4, st, codes), Error);
}

// The same stats, codes and bias shifts on every CPU: the loops are multi-versioned (AVX-512,
// AVX2, baseline x86-64) and built for NEON on AArch64, with no multiply-add contraction and a fixed
// order of every sum. The expected hash was computed on x86-64 with AVX-512; the AArch64 stage
// (qemu) checks the same value, and so did `qemu-x86_64 -cpu qemu64` and `-cpu Haswell` (the
// baseline and AVX2 versions). The layer reads the graph input: a layer behind fp32 kernels sees
// activations that differ in their last bits between ISAs (as calibration's ranges do), and so
// would its stats.
TEST(Rounding, TheSameCodesOnEveryCpu) {
  OddLayers m;
  auto model = compile_plain(m.g);
  std::vector<std::vector<Tensor>> samples;
  for (uint64_t i = 0; i < 3; ++i) samples.push_back({correlated_input(40 + i)});
  const LayerInputs s = collect_layer_inputs(*model, samples, {"conv"});
  uint64_t h = 0;
  for (const char* node : {"conv"}) {
    const LayerInputStats& st = s.at(node);
    h = h * 31 + content_hash(st.H.data(), st.H.size() * sizeof(float));
    const Node& n = *std::find_if(m.g.nodes.begin(), m.g.nodes.end(), [&](const Node& x) { return x.name == node; });
    const Tensor& w = *m.g.constant(n.inputs[1]);
    for (DType code : {DType::i8, DType::i4, DType::i2}) {
      QuantParams q;
      Tensor codes = quantize_weights(w, code, WeightScale::mse, code, q);
      const RoundingOutcome r = round_weights_gptq(w, q, code, code, st, codes, 2);
      h = h * 31 + content_hash(codes.raw(), static_cast<size_t>(codes.nbytes()));
      h = h * 31 + content_hash(r.bias_shift.data(), r.bias_shift.size() * sizeof(float));
    }
  }
  EXPECT_EQ(h, 0xb804ff35f49db7d4u) << "0x" << std::hex << h;
}

// MobileNetV2 (32 x 32) at w4a8 and w2a8: every layer it re-rounds with a lower layer
// error than round-to-nearest, nearly all of them re-rounded, and the model closer to fp32 on
// held-out inputs (measured: cosine 0.9907 -> 0.9994 at w4a8, 0.740 -> 0.995 at w2a8).
TEST(Rounding, EveryLayerItTouchesLosesLessThanNearestAndTheModelGetsCloser) {
  for (const char* precision : {"w4a8", "w2a8"}) {
    SCOPED_TRACE(precision);
    BuildOptions o = test::small_zoo("mobilenet_v2", 4);
    o.precision = parse_precision(precision);
    QuantizationStart st = start_quantization(o);
    QuantizeOptions q = st.quantize;
    const std::vector<Range> ranges = calibrate_model(*st.fp32, q);
    const Graph nearest = quantize_graph(st.fp32->graph(), ranges, q);
    q.rounding = Rounding::gptq;
    EXPECT_THAT([&] { quantize_graph(st.fp32->graph(), ranges, q); },
                ::testing::ThrowsMessage<Error>(HasSubstr("needs its input stats")));
    prepare_rounding(*st.fp32, q);
    const Graph gptq = quantize_graph(st.fp32->graph(), ranges, q);
    const auto& outcomes = q.rounding_state->outcomes;
    EXPECT_EQ(outcomes.size(), 53u);  // 52 convs and the classifier (the stem and classifier at 8 bits)
    int applied = 0;
    for (auto& [node, r] : outcomes) {
      EXPECT_LE(r.error, r.nearest_error) << node;
      if (r.applied) {
        ++applied;
        EXPECT_LT(r.error, r.nearest_error) << node;
      }
    }
    EXPECT_GE(applied, 47) << "of 53";
    CompileOptions c = st.compile;
    c.threads = 1;
    auto mn = CompiledModel::compile(nearest, c), mg = CompiledModel::compile(gptq, c);
    OutputAgreement an, ag;
    const auto eval = held_out_inputs(st.fp32->graph(), 4);
    for (const auto& in : eval) {
      const Tensor ref = st.fp32->run(in)[0];
      add_output(an, compare_output(ref, mn->run(in)[0]));
      add_output(ag, compare_output(ref, mg->run(in)[0]));
    }
    finish_agreement(an, 4);
    finish_agreement(ag, 4);
    EXPECT_GT(ag.cosine_mean, an.cosine_mean);
    EXPECT_LT(ag.rel_l2_mean, an.rel_l2_mean);
  }
}

TEST(Rounding, SameInputsGiveTheSameArtifactThroughTheFrontDoor) {
  std::string bytes[2];
  for (int i = 0; i < 2; ++i) {
    BuildOptions o = test::small_zoo("mobilenet_v2", 2);
    o.precision = parse_precision("w4a8");
    set_build_option(o, "rounding", "gptq");
    const BuiltModel b = build_model(o);
    const std::string path = (std::filesystem::temp_directory_path() / ("rounding_" + std::to_string(getpid()) + ".lbm")).string();
    save_artifact(path, b.graph, artifact_metadata(b, "mobilenet_v2").dump());
    std::ifstream f(path, std::ios::binary);
    bytes[i].assign(std::istreambuf_iterator<char>(f), {});
    std::filesystem::remove(path);
  }
  EXPECT_FALSE(bytes[0].empty());
  EXPECT_TRUE(bytes[0] == bytes[1]);
  BuildOptions o;
  EXPECT_THAT([&] { set_build_option(o, "rounding", "adaround"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("unknown rounding 'adaround'")));
}

}  // namespace
}  // namespace lowbit
