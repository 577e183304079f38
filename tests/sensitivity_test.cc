// api/sensitivity.h: every layer quantized alone at each precision, on a small ResNet-18.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "lowbit/api/build.h"
#include "lowbit/api/compare.h"
#include "lowbit/api/sensitivity.h"
#include "lowbit/common/error.h"
#include "lowbit/io/synthetic.h"

#include "small_models.h"

namespace lowbit {
namespace {

using ::testing::HasSubstr;

using test::small_resnet18;

class SensitivityResnet18 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SensitivityOptions s;
    s.precisions = {kInt8, parse_precision("w2a8")};
    s.eval_samples = 3;
    s.timing_runs = 1;
    result_ = new Sensitivity(analyze_sensitivity(small_resnet18(), s));
  }
  static void TearDownTestSuite() { delete result_; }
  static const Sensitivity& r() { return *result_; }
  static Sensitivity* result_;
};
Sensitivity* SensitivityResnet18::result_ = nullptr;

TEST_F(SensitivityResnet18, EveryConvAndGemmAtEveryPrecision) {
  BuildOptions o = small_resnet18();
  const BuiltModel fp = build_model(o);
  // ResNet-18: the stem, 16 block convs, 3 downsampling 1x1 convs and the classifier.
  ASSERT_EQ(r().layers.size(), 21u);
  EXPECT_EQ(r().layers.front().op, "Conv");
  EXPECT_EQ(r().layers.back().op, "Gemm");
  EXPECT_EQ(r().precisions, (std::vector<std::string>{"int8", "w2a8"}));
  EXPECT_EQ(r().eval_inputs, 3);
  std::set<std::string> names;
  for (const LayerSensitivity& l : r().layers) {
    names.insert(l.node);
    ASSERT_EQ(l.at.size(), 2u) << l.node;
    EXPECT_GT(l.macs, 0) << l.node;
    EXPECT_GT(l.fp32_ms, 0) << l.node;
    for (const LayerAt& a : l.at) {
      EXPECT_GT(a.ms, 0) << l.node << " " << a.precision;
      EXPECT_FALSE(a.kernel.empty()) << l.node << " " << a.precision;
      EXPECT_LE(a.cosine, 1.0 + 1e-9);
      EXPECT_GE(a.top1, 0.0);
    }
  }
  EXPECT_EQ(names.size(), r().layers.size());
}

TEST_F(SensitivityResnet18, BytesFollowTheWidths) {
  for (const LayerSensitivity& l : r().layers) {
    const LayerAt &i8 = l.at[0], &w2 = l.at[1];
    // Weights: 4 bytes -> 1 byte -> 1/4 byte per value; the fp32 bias stays (small beside them).
    EXPECT_LT(i8.weight_bytes, l.fp32_weight_bytes / 3) << l.node;
    EXPECT_GT(i8.weight_bytes, l.fp32_weight_bytes / 4 - 1) << l.node;
    EXPECT_LT(w2.weight_bytes, i8.weight_bytes) << l.node;
  }
}

TEST_F(SensitivityResnet18, NarrowerCodesDoMoreDamage) {
  // One layer at int8 barely moves the output; at 2 bits it does, and its own SQNR says why.
  double damage8 = 0, damage2 = 0;
  for (const LayerSensitivity& l : r().layers) {
    const LayerAt &i8 = l.at[0], &w2 = l.at[1];
    EXPECT_GT(i8.cosine, 0.99) << l.node;
    EXPECT_GT(i8.sqnr_db, 20) << l.node;
    EXPECT_GT(i8.sqnr_db, w2.sqnr_db) << l.node;
    damage8 += 1 - i8.cosine;
    damage2 += 1 - w2.cosine;
  }
  EXPECT_GT(damage2, 10 * damage8);
}

TEST_F(SensitivityResnet18, AlonePartsDoLessThanTheWhole) {
  // Independent of the analysis: the model quantized throughout at int8 (build_model, the normal
  // path) loses at least as much as its worst single layer.
  BuildOptions o = small_resnet18();
  const BuiltModel fp = build_model(o);
  o.precision = kInt8;
  const BuiltModel q = build_model(o);
  std::vector<std::vector<Tensor>> in;
  for (int i = 0; i < 3; ++i) in.push_back(synthetic_inputs(fp.model->graph(), 50000 + static_cast<uint64_t>(i)));
  const Comparison c = compare_models(fp, q, nullptr, in);
  double worst = 1;
  for (const LayerSensitivity& l : r().layers) worst = std::min(worst, l.at[0].cosine);
  EXPECT_LE(c.vs_fp32.cosine_mean, worst + 1e-4);
}

TEST_F(SensitivityResnet18, RankedByDamagePerUnitSaved) {
  for (SensitivityRank by : {SensitivityRank::per_byte, SensitivityRank::per_ms}) {
    const auto ranked = rank_choices(r(), by);
    ASSERT_EQ(ranked.size(), 2 * r().layers.size());
    double last = -1;
    bool saving = true;
    for (const SensitivityChoice& c : ranked) {
      const double saved = by == SensitivityRank::per_byte ? c.bytes_saved : c.ms_saved;
      if (saved <= 0) {
        saving = false;  // the rest save nothing
        continue;
      }
      ASSERT_TRUE(saving) << "a saving choice after one that saves nothing";
      EXPECT_GE(c.damage / saved, last - 1e-15);
      last = c.damage / saved;
    }
  }
  const auto j = sensitivity_json(r());
  EXPECT_EQ(j["layers"].size(), r().layers.size());
  EXPECT_TRUE(j["layers"][0]["at"].contains("w2a8"));
}

// The table is reproducible: the same model, options and inputs give the same measurements to the
// last bit (only the timings vary), so the same ranking by bytes and the same choices downstream.
TEST_F(SensitivityResnet18, SameInputsGiveTheSameTable) {
  SensitivityOptions s;
  s.precisions = {kInt8, parse_precision("w2a8")};
  s.eval_samples = 3;
  s.timing_runs = 1;
  const Sensitivity again = analyze_sensitivity(small_resnet18(), s);
  ASSERT_EQ(again.layers.size(), r().layers.size());
  for (size_t i = 0; i < again.layers.size(); ++i) {
    const LayerSensitivity &a = again.layers[i], &b = r().layers[i];
    EXPECT_EQ(a.node, b.node);
    EXPECT_EQ(a.macs, b.macs);
    EXPECT_EQ(a.fp32_weight_bytes, b.fp32_weight_bytes);
    ASSERT_EQ(a.at.size(), b.at.size());
    for (size_t k = 0; k < a.at.size(); ++k) {
      SCOPED_TRACE(a.node + " " + a.at[k].precision);
      EXPECT_EQ(a.at[k].cosine, b.at[k].cosine);
      EXPECT_EQ(a.at[k].rel_l2, b.at[k].rel_l2);
      EXPECT_EQ(a.at[k].top1, b.at[k].top1);
      EXPECT_EQ(a.at[k].sqnr_db, b.at[k].sqnr_db);
      EXPECT_EQ(a.at[k].weight_bytes, b.at[k].weight_bytes);
      EXPECT_EQ(a.at[k].kernel, b.at[k].kernel);
    }
  }
  const auto x = rank_choices(again, SensitivityRank::per_byte), y = rank_choices(r(), SensitivityRank::per_byte);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i].layer->node, y[i].layer->node) << "rank " << i;
    EXPECT_EQ(x[i].at->precision, y[i].at->precision) << "rank " << i;
  }
}

TEST(Sensitivity, RefusesWhatItCannotMeasure) {
  SensitivityOptions s;
  s.precisions = {kFp32};
  try {
    analyze_sensitivity(small_resnet18(), s);
    FAIL() << "fp32 accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("not a quantized precision"));
  }
  s.precisions = {};
  EXPECT_THROW(analyze_sensitivity(small_resnet18(), s), Error);
}

}  // namespace
}  // namespace lowbit
