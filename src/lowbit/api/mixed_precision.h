#pragma once
// Mixed precision against an accuracy budget (`lowbit quantize --precision auto`): a precision per
// Conv / Gemm, among the allowed ones (fp32 included), that keeps the model's output within
// `max_drop` of fp32 on the evaluation inputs while making it as fast (latency) or as small (size)
// as the measurements allow.
//
// The search is greedy over the sensitivity table (api/sensitivity.h), and every step is measured:
//  1. each layer starts at its cheapest allowed precision (by the objective: its measured time or
//     its weight bytes), skipping precisions another one beats on both cost and damage;
//  2. the whole mixed model is quantized, run on the evaluation inputs and compared with fp32;
//  3. while the drop is over budget, the layers whose next-dearer precision removes the most
//     damage per unit of cost added are promoted (a batch of about an eighth of what is left, so
//     ResNet-50's 54 layers take a dozen evaluations, not a hundred), and 2 is repeated;
//  4. the last batch may overshoot: its layers are stepped back down one at a time, least useful
//     first, wherever the whole model still meets the budget.
// build_auto_precision measures the drop again on the model as built (the guard may change nodes).
#include <map>
#include <string>
#include <vector>

#include "lowbit/api/build.h"
#include "lowbit/api/compare.h"
#include "lowbit/api/sensitivity.h"

namespace lowbit {

// drop: 1 - cosine, 1 - top-1 agreement, relative L2, 1 - mask IoU (a detector's or segmenter's
// output as a mask at AutoPrecisionOptions::mask_threshold: api/compare.h)
enum class AccuracyMetric { cosine, top1, l2, iou };
AccuracyMetric parse_accuracy_metric(const std::string& s);
enum class PrecisionObjective { latency, size };
PrecisionObjective parse_precision_objective(const std::string& s);

struct AutoPrecisionOptions {
  double max_drop = 0.01;
  AccuracyMetric metric = AccuracyMetric::cosine;
  PrecisionObjective objective = PrecisionObjective::latency;
  std::vector<Precision> allow;                  // empty: fp32, int8, w4a8
  std::vector<std::vector<Tensor>> eval_inputs;  // empty: eval_samples seeded synthetic ones
  int eval_samples = 8;
  int timing_runs = 3;
  float mask_threshold = kDefaultMaskThreshold;  // metric iou
};

struct AutoPrecisionResult {
  std::map<std::string, Precision> layers;  // every Conv / Gemm with its precision
  std::map<std::string, std::string> why;   // per layer, in words
  Precision base = kInt8;                   // the model's precision (ops other than Conv / Gemm)
  double drop = 0;                          // achieved, on the evaluation inputs
  bool met = false;
  int evaluations = 0;
  double cost = 0, all_base_cost = 0;  // the objective's total (ms or bytes), and with every layer at `base`
  Sensitivity sensitivity;
};

// o: the model, target and calibration as for build_model (o.precision is not used).
AutoPrecisionResult choose_layer_precisions(const BuildOptions& o, const AutoPrecisionOptions& a);

// choose_layer_precisions, then build_model with its choice; the built model's layer_precision
// says each node's precision and why. Throws when the budget cannot be met with what is allowed.
BuiltModel build_auto_precision(const BuildOptions& o, const AutoPrecisionOptions& a, AutoPrecisionResult* result);

}  // namespace lowbit
