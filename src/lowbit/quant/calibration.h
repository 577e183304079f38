#pragma once
// Calibration: run the fp32 model over sample inputs and choose, for every activation, the real
// range [lo, hi] that its u8 encoding will cover.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lowbit/runtime/compiled_model.h"

namespace lowbit {

// automatic (`--calibration auto`): per value, the range of whichever of the other four methods
// codes it with the least error as its readers see it (calibrate below).
enum class CalibrationMethod { minmax, percentile, entropy, mse, automatic };
CalibrationMethod parse_calibration_method(const std::string& name);
const char* calibration_method_name(CalibrationMethod m);

struct Range {
  float lo = 0, hi = 0;
  bool seen = false;
  CalibrationMethod method = CalibrationMethod::minmax;  // the method whose range this is
  bool automatic = false;  // chosen by `automatic` among the others (describe_calibration counts them)
};

// What one value's range is chosen for: `steps` + 1 code levels (255 for u8, 15 for u4, 3 for u2),
// and optionally a method of its own (sub-byte activations default to mse).
struct ValueCalibration {
  int steps = 255;
  std::optional<CalibrationMethod> method;
};

// Per value of `model.graph()`: the chosen range (seen == false for values never computed).
// Runs the samples twice (min/max, then 2048-bin histograms) unless every method is minmax, and a
// third time for the values calibrated `automatic`: each candidate range (minmax, percentile,
// entropy, mse) codes the value's real samples, and the one whose coding error costs the value's
// readers least wins: a Conv or Gemm measures it at its output, through its weights, on sampled
// input patches (its noise W (x - Q(x)) against its signal W x); any other reader on the values.
// `progress(done, total)` is called after every sample. `per_value` (indexed by value id; may be
// empty or shorter) overrides the level count and method per value.
std::vector<Range> calibrate(CompiledModel& model, const std::vector<std::vector<Tensor>>& samples,
                             CalibrationMethod method,
                             const std::function<void(int, int)>& progress = nullptr,
                             const std::vector<ValueCalibration>& per_value = {});

// "calibration auto: 61 value(s) ... percentile 30, mse 20, ..." (ranges chosen `automatic`).
std::string describe_calibration(const std::vector<Range>& ranges);

// Asymmetric parameters of unsigned activation codes (u8, u4, u2) for a range: the range is
// widened to contain 0 so that zero (padding, ReLU) is exact. Levels come from dtype_info(code).
QuantParams activation_params(Range r, DType code = DType::u8);
inline QuantParams u8_params(Range r) { return activation_params(r, DType::u8); }

}  // namespace lowbit
