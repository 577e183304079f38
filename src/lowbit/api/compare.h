#pragma once
// What quantization cost, measured: a quantized model against its fp32 original (and, below 8
// bits, against int8) on the same inputs: output cosine, relative L2 and top-1/top-5 agreement, and
// every quantized activation's SQNR against the fp32 tensor of the same name (which layer lost the
// signal). `lowbit compare` prints it; embedding programs read the struct or its JSON.
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lowbit/api/build.h"

namespace lowbit {

struct OutputAgreement {
  double cosine_mean = 0, cosine_min = 1, rel_l2_mean = 0;
  double top1 = 0, top5 = 0;  // fractions of the inputs whose fp32 best class the model keeps
  double mask_iou_mean = 0, mask_iou_min = 1;  // of the outputs' masks (OutputMetrics::mask_iou)
};

// The threshold a dense output (a detector's probability map, a segmentation) becomes a mask at
// for mask IoU, unless one is given: a sigmoid's even odds. PaddleOCR's text detector uses 0.3.
inline constexpr float kDefaultMaskThreshold = 0.5f;

// One output against its reference: cosine, relative L2, whether the reference's best class is
// the model's best (top1) and among its best five (top5), and the IoU of the two masks
// {output > mask_threshold} (1 when both are empty): a detector's or segmenter's task measure.
// Throws when dtypes or shapes differ.
struct OutputMetrics {
  double cosine, rel_l2;
  bool top1, top5;
  double mask_iou;
};
OutputMetrics compare_output(const Tensor& ref, const Tensor& q, float mask_threshold = kDefaultMaskThreshold);
// Means over inputs: add each input's metrics, then finish with the count.
void add_output(OutputAgreement& a, const OutputMetrics& m);
void finish_agreement(OutputAgreement& a, int inputs);

// Signal and noise of a value's quantized codes (u8, its QuantParams' first scale and zero point)
// or of its floats (a quantized layer that writes f32) against the fp32 tensor of the same value,
// summed over inputs.
struct SqnrAccumulator {
  double signal = 0, noise = 0;
  // Ignored unless the shapes match and `codes` is f32, or u8 with a scale and zero point.
  void add(const Tensor& ref, const TensorView& codes, const Value& v);
  double db() const { return noise > 0 ? 10 * std::log10(signal / noise) : 999.0; }  // 999: exact
};

struct LayerSqnr {
  std::string value, op;  // the quantized activation and the op that produced it
  double sqnr_db = 0;     // 10 log10(signal / noise); 999 when exact
};

struct Comparison {
  int inputs = 0;
  float mask_threshold = kDefaultMaskThreshold;
  OutputAgreement vs_fp32;
  bool has_vs_int8 = false;
  OutputAgreement vs_int8;        // when an int8 build was given (sub-byte precisions)
  std::vector<LayerSqnr> layers;  // lowest SQNR first
};

// The first output of `q` against the first output of `fp32` (and of `int8` when given) on each
// input; per-layer SQNR from the u8 activations of `q` whose names the fp32 graph also has.
Comparison compare_models(const BuiltModel& fp32, const BuiltModel& q, const BuiltModel* int8,
                          const std::vector<std::vector<Tensor>>& inputs, float mask_threshold = kDefaultMaskThreshold);

nlohmann::json comparison_json(const Comparison& c);

}  // namespace lowbit
