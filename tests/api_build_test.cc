// lowbit::build_model (api/build.h): the library's front door, as an embedding program calls it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "lowbit/api/build.h"
#include "lowbit/api/compare.h"
#include "lowbit/artifact/artifact.h"
#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/io/synthetic.h"

#include "small_models.h"

namespace lowbit {
namespace {

using ::testing::HasSubstr;

// Calibration's default sample count (8): these tests check what the front door does by default.
BuildOptions small_resnet18() { return test::small_resnet18(QuantizeOptions{}.synthetic_samples); }

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

#if defined(LOWBIT_HAS_ONNX)
namespace lowbit {
namespace {

// An ONNX model in QDQ form carries its own codes: it runs as imported, and asking to quantize it
// again is refused by name (it once failed inside the quantizer: "input 'xq' has no quantization
// parameters").
TEST(ApiBuild, AnAlreadyQuantizedModelRunsAsImportedAndIsNotQuantizedAgain) {
  BuildOptions o;
  o.model = LOWBIT_SOURCE_DIR "/tests/fuzz/corpus/onnx/qdq.onnx";
  o.compile.threads = 1;
  BuiltModel as_is = build_model(o);
  bool qconv = false;
  for (const Node& n : as_is.model->graph().nodes) qconv |= n.op == "QConv";
  EXPECT_TRUE(qconv);
  o.precision = kInt8;
  try {
    build_model(o);
    ADD_FAILURE() << "a QDQ model was quantized again";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("is already quantized"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("precision fp32"));
  }
}

}  // namespace
}  // namespace lowbit
#endif

namespace lowbit {
namespace {

TEST(ApiBuild, CompareMeasuresOutputsAndEveryQuantizedLayer) {
  BuildOptions o = small_resnet18();
  const BuiltModel fp = build_model(o);
  o.precision = kInt8;
  o.quantize.synthetic_samples = 2;
  const BuiltModel q = build_model(o);
  std::vector<std::vector<Tensor>> inputs = {synthetic_inputs(fp.model->graph(), 7), synthetic_inputs(fp.model->graph(), 8)};
  // The fp32 model against itself: identical outputs, and no quantized layer to measure.
  const Comparison same = compare_models(fp, fp, nullptr, inputs);
  EXPECT_NEAR(same.vs_fp32.cosine_mean, 1.0, 1e-9);
  EXPECT_EQ(same.vs_fp32.rel_l2_mean, 0.0);
  EXPECT_EQ(same.vs_fp32.top1, 1.0);
  EXPECT_TRUE(same.layers.empty());
  const Comparison c = compare_models(fp, q, nullptr, inputs);
  EXPECT_EQ(c.inputs, 2);
  EXPECT_GT(c.vs_fp32.cosine_mean, 0.98);
  EXPECT_LE(c.vs_fp32.cosine_min, c.vs_fp32.cosine_mean);
  ASSERT_GT(c.layers.size(), 10u);  // every quantized conv output of ResNet-18
  for (size_t i = 1; i < c.layers.size(); ++i) EXPECT_LE(c.layers[i - 1].sqnr_db, c.layers[i].sqnr_db);
  for (const LayerSqnr& l : c.layers) {
    EXPECT_GT(l.sqnr_db, 5.0) << l.value;  // int8 keeps every layer's signal well above its noise
    EXPECT_FALSE(l.op.empty());
  }
  const nlohmann::json j = comparison_json(c);
  EXPECT_EQ(j["layers"].size(), c.layers.size());
  EXPECT_FALSE(j.contains("vs_int8"));
  EXPECT_EQ(j["mask_threshold"], kDefaultMaskThreshold);
  EXPECT_TRUE(j["vs_fp32"].contains("mask_iou_mean"));
}

// The mask IoU a detector's map is judged by: {y > t} against {ref > t}, counted here by hand.
TEST(ApiBuild, MaskIouOfTwoMapsAtAThreshold) {
  Tensor ref(DType::f32, {1, 1, 2, 4}), q(DType::f32, {1, 1, 2, 4});
  const float r[] = {0.9f, 0.8f, 0.1f, 0.0f, 0.31f, 0.2f, 0.7f, 0.0f};  // above 0.3: 0, 1, 4, 6
  const float y[] = {0.9f, 0.1f, 0.1f, 0.5f, 0.35f, 0.2f, 0.6f, 0.0f};  // above 0.3: 0, 3, 4, 6
  std::copy(r, r + 8, ref.data<float>());
  std::copy(y, y + 8, q.data<float>());
  EXPECT_DOUBLE_EQ(compare_output(ref, q, 0.3f).mask_iou, 3.0 / 5.0);  // both: 0, 4, 6; either: 0, 1, 3, 4, 6
  EXPECT_DOUBLE_EQ(compare_output(ref, q, 0.95f).mask_iou, 1.0);      // two empty masks agree
  EXPECT_DOUBLE_EQ(compare_output(ref, ref, 0.3f).mask_iou, 1.0);
  OutputAgreement a;
  add_output(a, compare_output(ref, q, 0.3f));
  add_output(a, compare_output(ref, ref, 0.3f));
  finish_agreement(a, 2);
  EXPECT_DOUBLE_EQ(a.mask_iou_mean, 0.8);
  EXPECT_DOUBLE_EQ(a.mask_iou_min, 0.6);
}

}  // namespace
}  // namespace lowbit
