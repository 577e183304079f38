#pragma once
// Post-training quantization: calibrate the optimised fp32 graph, then rewrite it into the
// quantized domain (QConv / QGemm / QAdd, u8 pooling and reshapes) with QuantizeLinear only where
// fp32 enters and DequantizeLinear only where fp32 is needed again (graph outputs, ops without a
// quantized form).
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "lowbit/quant/calibration.h"
#include "lowbit/runtime/compiled_model.h"

namespace lowbit {

struct QuantizeOptions {
  int bits = 8;
  CalibrationMethod method = CalibrationMethod::minmax;
  std::vector<std::vector<Tensor>> samples;  // calibration inputs; empty: synthetic
  int synthetic_samples = 8;
  uint64_t seed = 1000;                      // synthetic sample i uses seed + i
  std::function<void(int, int)> progress;    // called after each calibration pass over a sample
  std::set<std::string> keep_fp32;           // node names (of the fp32 graph) not to quantize
};

// Rewrites `fp32.graph()` (already validated and optimised) into a quantized graph. The result
// is not yet validated; compile it with CompiledModel::compile.
Graph quantize_model(CompiledModel& fp32, const QuantizeOptions& opts);

// Calibration with the options' samples (or seeded synthetic ones); checks the bit width.
std::vector<Range> calibrate_model(CompiledModel& fp32, const QuantizeOptions& opts);

// The rewrite alone, given calibrated ranges per value of `g`.
Graph quantize_graph(const Graph& g, const std::vector<Range>& ranges, const std::set<std::string>& keep_fp32);

// Per output channel (axis 0), symmetric: q = round(w / s), s = max|w| / 127.
Tensor quantize_weights_per_channel(const Tensor& w, QuantParams& q);

}  // namespace lowbit
