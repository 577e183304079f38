#pragma once
// `--calibration auto` (quant/calibration.h): each activation's range is the candidate (the range
// minmax, percentile, entropy and mse would each give it) whose coding error costs the value's
// readers least, measured on the calibration samples. calibrate() computes the candidates from its
// histograms and asks choose_candidates which one wins; calibration_auto.cc says how it measures.
#include <array>
#include <functional>
#include <map>
#include <vector>

#include "lowbit/quant/calibration.h"

namespace lowbit {

// What `automatic` chooses among, in the order that wins a tie.
inline constexpr size_t kCandidates = 4;
inline constexpr std::array<CalibrationMethod, kCandidates> kCandidateMethods{
    CalibrationMethod::minmax, CalibrationMethod::percentile, CalibrationMethod::entropy, CalibrationMethod::mse};

// The affine coding of a range with `steps` + 1 unsigned levels: the range widened to contain 0
// (so that zero, padding and ReLU's floor, is exact), zero point rounded onto a level. What
// activation_params and the candidates' measurements both code with.
struct Affine {
  double scale;
  int32_t zero_point;
};
Affine affine_coding(Range r, double steps);

// Per value of `candidates` (value id -> its candidate ranges) that a quantized graph can code:
// the index of the candidate whose coding costs its readers least over `samples` (one more run of
// each; `sample_done` after each). Values no quantized op codes are left out (they keep minmax's
// range). `steps_of(v)`: the value's code levels less one. LOWBIT_VERBOSE=calibration traces
// every value's candidates and measures.
std::map<size_t, size_t> choose_candidates(CompiledModel& model, const std::vector<std::vector<Tensor>>& samples,
                                           const std::map<size_t, std::array<Range, kCandidates>>& candidates,
                                           const std::function<int(size_t)>& steps_of,
                                           const std::function<void()>& sample_done);

}  // namespace lowbit
