// lowbit::build_model (api/build.h): the library's front door, as an embedding program calls it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "lowbit/api/build.h"
#include "lowbit/artifact/artifact.h"
#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/io/synthetic.h"

namespace lowbit {
namespace {

using ::testing::HasSubstr;

BuildOptions small_resnet18() {
  BuildOptions o;
  o.model = "resnet18";
  o.input_shapes = {{"input", {1, 3, 32, 32}}};
  o.compile.threads = 1;
  return o;
}

TEST(ApiBuild, Fp32AndInt8FromAZooName) {
  BuildOptions o = small_resnet18();
  BuiltModel fp = build_model(o);
  EXPECT_EQ(fp.precision, "fp32");
  EXPECT_EQ(fp.model->graph().value(fp.model->graph().inputs[0]).shape, (Shape{1, 3, 32, 32}));
  o.precision = kInt8;
  o.quantize.synthetic_samples = 2;
  int progress_calls = 0;
  o.quantize.progress = [&](int, int) { ++progress_calls; };
  BuiltModel q = build_model(o);
  EXPECT_EQ(q.precision, "int8");
  EXPECT_EQ(progress_calls, 2);
  bool any_qconv = false;
  for (const Node& n : q.graph.nodes) any_qconv |= n.op == "QConv";
  EXPECT_TRUE(any_qconv);
  const auto in = synthetic_inputs(q.model->graph(), 1);
  EXPECT_EQ(q.model->run(in)[0].shape(), (Shape{1, 1000}));
}

// The scale of the first quantized activation (the image's own quantization).
float first_activation_scale(const Graph& g) {
  for (const Node& n : g.nodes) {
    const Value& y = g.value(n.outputs[0]);
    if (!y.constant && y.quant && !y.quant->scale.empty()) return y.quant->scale[0];
  }
  return 0.f;
}

// Regression: build_quantized once moved the options (samples, progress) away before calibrating
// with them, so calibration silently ran on synthetic inputs whatever the caller gave.
TEST(ApiBuild, CalibrationUsesTheGivenSamples) {
  BuildOptions o = small_resnet18();
  o.precision = kInt8;
  o.quantize.synthetic_samples = 2;
  const float synthetic = first_activation_scale(build_model(o).graph);
  Graph shape_only = build_model(small_resnet18()).model->graph();
  for (uint64_t seed : {1, 2}) {
    Tensor t = synthetic_inputs(shape_only, seed)[0];
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= 10.f;
    o.quantize.samples.push_back({t});
  }
  const float given = first_activation_scale(build_model(o).graph);
  ASSERT_GT(synthetic, 0.f);
  EXPECT_GT(given / synthetic, 5.f) << "given " << given << ", synthetic " << synthetic;
}

TEST(ApiBuild, SubbyteNotesGoToTheLogSink) {
  std::vector<std::string> notes;
  set_log_sink([&](LogLevel l, const std::string& m) {
    if (l == LogLevel::note) notes.push_back(m);
  });
  BuildOptions o = small_resnet18();
  o.precision = parse_precision("w4a8");
  o.quantize.synthetic_samples = 1;
  testing::internal::CaptureStderr();
  build_model(o);
  const std::string err = testing::internal::GetCapturedStderr();
  set_log_sink(nullptr);
  EXPECT_EQ(err, "");
  ASSERT_FALSE(notes.empty());
  EXPECT_THAT(notes[0], HasSubstr("node(s) kept at 8 bits"));
}

TEST(ApiBuild, AnArtifactRunsForItsOwnTargetAndKeepsItsShapes) {
  BuildOptions o = small_resnet18();
  o.precision = kInt8;
  o.quantize.synthetic_samples = 1;
  BuiltModel q = build_model(o);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("lowbit_api_" + std::to_string(::getpid()) + ".lbm")).string();
  const Target t = parse_target("x86-64");
  save_artifact(path, q.graph,
                "{\"precision\":\"int8\",\"target\":\"x86-64\",\"target_spec\":\"" + t.spec() + "\"}");
  BuildOptions a;
  a.model = path;
  a.compile.threads = 1;
  a.allow_foreign_target = true;  // an aarch64 host can still compile it to explain
  BuiltModel loaded = build_model(a);
  EXPECT_EQ(loaded.precision, "int8");
  EXPECT_THAT(loaded.model->target().name, HasSubstr("the artifact's target"));
  EXPECT_EQ(loaded.model->target().features, t.features);
  a.input_shapes = {{"input", {1, 3, 64, 64}}};
  EXPECT_THROW(build_model(a), Error);
  std::filesystem::remove(path);
}

TEST(ApiBuild, AnUnknownModelIsAClearError) {
  BuildOptions o;
  o.model = "no_such_model";
  try {
    build_model(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no_such_model"));
  }
}

}  // namespace
}  // namespace lowbit
