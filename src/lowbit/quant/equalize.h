#pragma once
// Cross-layer equalization (#11 item 4), from each channel's measured activation range: a Conv
// whose output goes through nothing but an optional ReLU into other Convs can scale its output
// channel c by 1 / s_c if every reader scales the weights that read channel c by s_c, and the fp32
// model computes the same function (ReLU(x / s) = ReLU(x) / s for s > 0). A per-tensor activation
// code then spends its levels on channels brought to a common range instead of on one outlier
// channel, at the price of wider columns in the readers' weights (whose scales are per output
// channel). Where that trade pays is measured, pair by pair, at the readers' outputs.
//
// The scales balance channel c's activation range r_x[c] against its readers' weight range
// r_w[c] (Nagel et al. 2019, "Data-Free Quantization", with the activation side measured as
// SmoothQuant does): s_c = r_x[c]^a / r_w[c]^(1 - a), a in {0.25, 0.5, 0.75}, normalised to a
// geometric mean of 1. For each pair, the readers' output error with both their input codes
// (per-tensor, the model's activation width) and their weight codes (per output channel, its
// weight width) is measured on 256 sampled input patches over the calibration samples, as noise
// against the fp32 output: the scales with the least error are applied if they lower it by 1% or
// more, else the pair is left as it was.
#include <string>
#include <vector>

#include "lowbit/quant/quantize.h"

namespace lowbit {

struct EqualizedPair {
  std::string producer;              // the Conv whose output channels were divided by s
  std::vector<std::string> readers;  // the Convs whose input channels were multiplied by s
  double alpha = 0;                  // the exponent chosen (0: left as it was)
  double error_before = 0, error_after = 0;  // the readers' relative output error, quantized
  bool applied() const { return alpha > 0; }
};

// Equalizes `g` (the optimised fp32 graph `fp32` was compiled from, activations not fused into
// post_op) in place where it pays, measured on `samples` with the codes `opts` gives each reader
// (node_precision). Returns every pair it could rescale, applied or not, in graph order.
std::vector<EqualizedPair> equalize_layers(CompiledModel& fp32, const std::vector<std::vector<Tensor>>& samples,
                                           const QuantizeOptions& opts, Graph& g);

// "equalize: 12 of 16 conv pairs rescaled, readers' error 0.0123 -> 0.0081 (mean)".
std::string describe_equalization(const std::vector<EqualizedPair>& pairs);

}  // namespace lowbit
