// The quantizer, the guard and the .lbm artifact, end to end on the zoo's models.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "lowbit/api/build.h"
#include "lowbit/artifact/artifact.h"
#include "lowbit/common/error.h"
#include "lowbit/frontend/load_model.h"
#include "lowbit/frontend/zoo/zoo.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/quant/guard.h"
#include "small_models.h"

using namespace lowbit;
using ::testing::HasSubstr;

namespace {

// `side` > 0: the model at a side x side input instead of its own 224 (the tests that run under
// qemu on every CI run: ResNet-18 int8 end to end took 119 emulated seconds at 224, 12x the work of 64).
std::unique_ptr<CompiledModel> fp32_model(const std::string& name, int64_t side = 0) {
  CompileOptions o;
  o.threads = 2;
  if (side > 0) return CompiledModel::compile(load_model(name, {{"input", {1, 3, side, side}}}), o);
  return CompiledModel::compile(build_zoo_model(name), o);
}

double cosine(const Tensor& a, const Tensor& b) {
  double d = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    d += double(a.data<float>()[i]) * b.data<float>()[i];
    na += double(a.data<float>()[i]) * a.data<float>()[i];
    nb += double(b.data<float>()[i]) * b.data<float>()[i];
  }
  return d / std::sqrt(na * nb);
}

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (auto& node : g.nodes) n += node.op == op;
  return n;
}

std::string tmp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("lowbit_test_" + std::to_string(::getpid()) + name)).string();
}

}  // namespace

TEST(Quantize, Resnet18Int8TracksFp32OnUnseenInputs) {
  auto fp32 = fp32_model("resnet18", 64);
  CompileOptions o;
  o.threads = 2;
  QuantizeOptions q;
  q.synthetic_samples = 4;
  QuantizedBuild b = build_quantized(*fp32, o, q, SlowPolicy::fp32);
  // Every conv and the classifier run quantized; the only fp32 boundary ops are at the edges.
  EXPECT_EQ(count_ops(b.model->graph(), "Conv"), 0);
  EXPECT_EQ(count_ops(b.model->graph(), "QConv"), 20);
  EXPECT_EQ(count_ops(b.model->graph(), "QGemm"), 1);
  // The final GlobalAveragePool runs on its u8 codes and requantizes to a range of its own, narrower
  // than its input's (the mean of a ReLU map spans a fraction of it).
  int gaps = 0;
  for (const Node& n : b.model->graph().nodes) {
    if (n.op != "GlobalAveragePool") continue;
    ++gaps;
    const Value& x = b.model->graph().value(n.inputs[0]);
    const Value& y = b.model->graph().value(n.outputs[0]);
    ASSERT_EQ(x.dtype, DType::u8);
    ASSERT_TRUE(x.quant && y.quant);
    EXPECT_LT(y.quant->scale[0], x.quant->scale[0]);  // 1.7x narrower here
  }
  EXPECT_EQ(gaps, 1);
  for (uint64_t seed = 900; seed < 903; ++seed) {  // calibration used seeds 1000..1003
    auto in = synthetic_inputs(fp32->graph(), seed);
    EXPECT_GT(cosine(fp32->run(in)[0], b.model->run(in)[0]), 0.99) << "seed " << seed;
  }
}

TEST(Quantize, SameInputsGiveTheSameArtifactByteForByte) {
  auto fp32 = fp32_model("resnet18");
  CompileOptions o;
  QuantizeOptions q;
  q.synthetic_samples = 2;
  std::string a = tmp_path("a.lbm"), b = tmp_path("b.lbm");
  save_artifact(a, build_quantized(*fp32, o, q, SlowPolicy::fp32).graph, "{}");
  save_artifact(b, build_quantized(*fp32, o, q, SlowPolicy::fp32).graph, "{}");
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  std::string sa((std::istreambuf_iterator<char>(fa)), {}), sb((std::istreambuf_iterator<char>(fb)), {});
  EXPECT_FALSE(sa.empty());
  EXPECT_TRUE(sa == sb);
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

TEST(Artifact, RoundTripRunsIdenticallyAndIsFourTimesSmaller) {
  auto fp32 = fp32_model("resnet18");
  CompileOptions o;
  o.threads = 1;
  QuantizeOptions q;
  q.synthetic_samples = 2;
  QuantizedBuild b = build_quantized(*fp32, o, q, SlowPolicy::fp32);
  std::string path = tmp_path("rt.lbm");
  save_artifact(path, b.graph, R"({"precision":"int8"})");
  Artifact a = load_artifact(path);
  EXPECT_THAT(a.metadata_json, HasSubstr("int8"));
  auto loaded = CompiledModel::compile(std::move(a.graph), o);
  auto in = synthetic_inputs(fp32->graph(), 7);
  Tensor x = b.model->run(in)[0], y = loaded->run(in)[0];
  ASSERT_EQ(x.nbytes(), y.nbytes());
  EXPECT_EQ(0, std::memcmp(x.raw(), y.raw(), size_t(x.nbytes())));
  EXPECT_GT(double(fp32->weight_bytes()) / double(std::filesystem::file_size(path)), 3.9);
  std::filesystem::remove(path);
}

TEST(Artifact, TruncatedOrCorruptIsAClearError) {
  auto fp32 = fp32_model("resnet18");
  std::string path = tmp_path("bad.lbm");
  save_artifact(path, fp32->graph(), "{}");
  auto size = std::filesystem::file_size(path);
  {
    std::string bytes;
    std::ifstream f(path, std::ios::binary);
    bytes.assign((std::istreambuf_iterator<char>(f)), {});
    bytes[size / 2] ^= 0x5a;
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  }
  try {
    load_artifact(path);
    FAIL() << "corrupt artifact loaded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("checksum mismatch"));
  }
  std::filesystem::resize_file(path, size / 3);
  try {
    load_artifact(path);
    FAIL() << "truncated artifact loaded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("truncated"));
    EXPECT_THAT(e.what(), HasSubstr(path));
  }
  std::filesystem::resize_file(path, 10);
  EXPECT_THROW(load_artifact(path), Error);
  std::filesystem::remove(path);
}

// The study behind lowbit: int8 on a target without SIMD int8 kernels must not silently run
// slower. Default: kept fp32 with a warning; error: refused at compile time, naming nodes.
TEST(Guard, TargetWithoutSimdInt8KeepsFp32OrRefuses) {
  auto fp32 = fp32_model("resnet18");
  CompileOptions o;
  o.target = parse_target("x86-64");
  o.allow_foreign_target = true;
  QuantizeOptions q;
  q.synthetic_samples = 1;
  QuantizedBuild b = build_quantized(*fp32, o, q, SlowPolicy::fp32);
  EXPECT_GE(b.slow.size(), 20u);
  EXPECT_EQ(count_ops(b.model->graph(), "QConv"), 0);
  EXPECT_EQ(count_ops(b.model->graph(), "Conv"), 20);
  try {
    build_quantized(*fp32, o, q, SlowPolicy::error);
    FAIL() << "--on-slow=error compiled";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("layer1.0.conv1"));
    EXPECT_THAT(e.what(), HasSubstr("lacks avx2"));
  }
  QuantizedBuild allowed = build_quantized(*fp32, o, q, SlowPolicy::allow);
  EXPECT_EQ(count_ops(allowed.model->graph(), "QConv"), 20);
}

TEST(Guard, HostWithAvx2RunsEveryConvQuantized) {
  if (!host_target().has(Feature::avx2)) GTEST_SKIP() << "host lacks avx2";
  auto fp32 = fp32_model("resnet18");
  CompileOptions o;
  o.target = parse_target("x86-64-v3");
  QuantizeOptions q;
  q.synthetic_samples = 1;
  QuantizedBuild b = build_quantized(*fp32, o, q, SlowPolicy::fp32);
  for (const SlowNode& s : b.slow) EXPECT_NE(s.op, "QConv") << s.node;
  EXPECT_EQ(count_ops(b.model->graph(), "QConv"), 20);
  for (const Step& s : b.model->steps()) {
    const Node& n = b.model->graph().nodes[size_t(s.node)];
    if (n.op == "QConv") {
      EXPECT_THAT(s.choice.chosen->name, HasSubstr("avx2")) << n.name;
    }
  }
}

// Autotuning may pick another exact int8 kernel per node (VNNI vs AVX2); the answer must not move,
// and the pins must survive an artifact round trip.
TEST(Autotune, PinsAKernelPerNodeWithoutChangingInt8Results) {
  auto fp32 = fp32_model("resnet18");
  CompileOptions o;
  o.threads = 1;
  QuantizeOptions q;
  q.synthetic_samples = 1;
  QuantizedBuild plain = build_quantized(*fp32, o, q, SlowPolicy::fp32);
  o.autotune = true;
  QuantizedBuild tuned = build_quantized(*fp32, o, q, SlowPolicy::fp32);
  int pinned = 0;
  for (const Step& s : tuned.model->steps()) {
    const Node& n = tuned.model->graph().nodes[size_t(s.node)];
    if (n.attrs.has(kPinnedKernelAttr)) {
      ++pinned;
      EXPECT_EQ(n.attrs.get_string(kPinnedKernelAttr, ""), s.choice.chosen->name) << n.name;
    }
  }
  // Nodes with two or more applicable SIMD kernels: 20+ with VNNI (igemm tiles and AVX2 ones);
  // on an AVX2-only host (Zen 3) the 3x3 convs' Winograd vs igemm: 10.
  EXPECT_GE(pinned, host_target().has(Feature::avx512vnni) ? 20 : 8);
  auto in = synthetic_inputs(fp32->graph(), 3);
  Tensor a = plain.model->run(in)[0], b = tuned.model->run(in)[0];
  EXPECT_EQ(0, std::memcmp(a.raw(), b.raw(), size_t(a.nbytes())));

  std::string path = tmp_path("tuned.lbm");
  save_artifact(path, tuned.model->graph(), "{}");
  CompileOptions plain_opts;
  auto loaded = CompiledModel::compile(load_artifact(path).graph, plain_opts);
  for (size_t i = 0; i < loaded->steps().size(); ++i)
    EXPECT_EQ(loaded->steps()[i].choice.chosen->name, tuned.model->steps()[i].choice.chosen->name);
  std::filesystem::remove(path);
}

// The guard's SIMD rules follow measurements (dispatch/table_qu8.cc). On an AVX2 target (x86-64-v3)
// every MobileNetV2 conv runs int8: the flat polyphase depthwise kernels and the igemm even at K =
// 16-32, remeasured 1.19-1.68x faster than fp32 there. On an AVX-512 target without VNNI
// (skylake-avx512) the fp32 FMAs match vpmaddwd's rate, so every QConv stays fp32 with that reason.
TEST(Guard, MeasuredSlowerSimdKernelsStayFp32) {
  if (!host_target().has(Feature::avx2)) GTEST_SKIP() << "host lacks avx2";
  auto fp32 = fp32_model("mobilenet_v2");
  QuantizeOptions q;
  q.synthetic_samples = 1;
  CompileOptions v3;
  v3.target = parse_target("x86-64-v3");
  QuantizedBuild b = build_quantized(*fp32, v3, q, SlowPolicy::fp32);
  int depthwise = 0, igemm = 0;
  for (const Step& s : b.model->steps()) {
    const Node& node = b.model->graph().nodes[s.node];
    depthwise += s.choice.chosen->name == "qu8-qc8w-dwconv2d-16x2-avx2";
    igemm += s.choice.chosen->name == "qu8-qc8w-conv2d-igemm-6x16-avx2";
    EXPECT_NE(node.op, "Conv") << node.name << " stayed fp32";
    EXPECT_NE(s.choice.chosen->name, "reference-QConv");
  }
  EXPECT_EQ(depthwise, 17);
  EXPECT_EQ(igemm, 35);  // 52 convs less the depthwise ones, K = 16 to 960
  EXPECT_TRUE(b.slow.empty()) << b.slow.front().reason;

  // Planned for skylake-avx512 on any x86-64 host (a smaller input: the rule is per node).
  BuildOptions sk = test::small_zoo("mobilenet_v2");
  sk.precision = kInt8;
  sk.target = parse_target("skylake-avx512");
  sk.allow_foreign_target = true;
  sk.on_slow = SlowPolicy::fp32;
  const BuiltModel s = build_model(sk);
  EXPECT_EQ(s.slow.size(), 52u);
  for (const SlowNode& n : s.slow) EXPECT_THAT(n.reason, HasSubstr("AVX-512 FMAs")) << n.kernel;
  sk.on_slow = SlowPolicy::error;
  try {
    build_model(sk);
    FAIL() << "--on-slow=error compiled";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("without VNNI"));
  }
}
