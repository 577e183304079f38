#pragma once
// Calibration: run the fp32 model over sample inputs and choose, for every activation, the real
// range [lo, hi] that its u8 encoding will cover.
#include <functional>
#include <string>
#include <vector>

#include "lowbit/runtime/compiled_model.h"

namespace lowbit {

enum class CalibrationMethod { minmax, percentile, entropy, mse };
CalibrationMethod parse_calibration_method(const std::string& name);
const char* calibration_method_name(CalibrationMethod m);

struct Range {
  float lo = 0, hi = 0;
  bool seen = false;
};

// Per value of `model.graph()`: the chosen range (seen == false for values never computed).
// Runs the samples twice (min/max, then 2048-bin histograms) unless the method is minmax.
// `progress(done, total)` is called after every sample.
std::vector<Range> calibrate(CompiledModel& model, const std::vector<std::vector<Tensor>>& samples,
                             CalibrationMethod method,
                             const std::function<void(int, int)>& progress = nullptr);

// u8 asymmetric parameters for a range: the range is widened to contain 0 so that zero (padding,
// ReLU) is exact.
QuantParams u8_params(Range r);

}  // namespace lowbit
