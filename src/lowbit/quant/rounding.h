#pragma once
// Rounding of narrow weight codes better than to nearest (#11): GPTQ's layer-wise second-order
// error feedback, with bias correction. docs/accuracy.md says what it does and what it measured.
//
// A layer's output error from its weights is dW X (X: its input patches, one column per output
// position), so what rounding should minimise is, per output channel, dw^T H dw with H = X X^T,
// not |dw|^2. GPTQ (Frantar et al. 2022) chooses the codes one input column at a time and pushes
// each column's rounding error onto the columns not yet rounded, weighted by H. It is computed
// here as Babai's nearest-plane walk on H's Cholesky factor (H = L L^T, columns last to first),
// which is GPTQ's greedy step without forming H's inverse (Chen et al. 2025 show the two are
// the same algorithm); the scales stay the ones quantize_weights chose.
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lowbit/runtime/compiled_model.h"

namespace lowbit {

enum class Rounding { nearest, gptq };
Rounding parse_rounding(const std::string& s);
const char* rounding_name(Rounding r);

// The inputs a Conv / Gemm layer saw during calibration, as its weights see them: the patch of
// every sampled output position (im2col: C/group * kh * kw values per group, in the weights'
// order; a Gemm's input row).
struct LayerInputStats {
  int64_t groups = 1, K = 0;  // K: patch length per group
  int64_t positions = 0;      // sampled output positions (per group)
  std::vector<float> H;       // groups x K x K: the sum of x x^T over the positions
  std::vector<double> sum;    // groups x K: the sum of x (bias correction uses the mean)
};
using LayerInputs = std::map<std::string, LayerInputStats>;  // by Conv / Gemm node name

// The stats of the named Conv / Gemm nodes of `fp32` (an optimised fp32 model) over `samples`:
// at most `max_positions` output positions per layer, spread evenly over the samples and over
// each sample's map. Deterministic: the same samples give the same bytes on every ISA.
LayerInputs collect_layer_inputs(CompiledModel& fp32, const std::vector<std::vector<Tensor>>& samples,
                                 const std::set<std::string>& nodes, int64_t max_positions = 2048);

struct RoundingOutcome {
  bool applied = false;  // false: the nearest codes stayed (GPTQ's were not better on H)
  // Layer reconstruction error sum_m dw_m^T H dw_m (dw: the weights less their dequantized codes)
  // of the nearest codes and of the codes kept.
  double nearest_error = 0, error = 0;
  std::vector<float> bias_shift;  // per output channel, when applied: (W - W_q) mean(x)
};

// Re-rounds `codes` (the nearest codes of `w` [M, K...] with the scales in `q`, stored as
// `storage`, as quantize_weights wrote them) against the layer's input stats. Rows of one group
// of a grouped conv share that group's H. Keeps the nearest codes when the new ones do not lower
// the layer reconstruction error. Runs on up to `threads` threads; the result does not depend on
// the count.
RoundingOutcome round_weights_gptq(const Tensor& w, const QuantParams& q, DType code, DType storage,
                                   const LayerInputStats& s, Tensor& codes, int threads = 0);

// What --rounding gptq measured and chose for one fp32 graph, shared by the copies of its
// QuantizeOptions: the layers' input stats (prepare_rounding), and every weight tensor rounded so
// far, so that the guard's rounds and the precision searches, which rewrite the same graph many
// times, round each layer once per code width.
struct RoundingState;
// One line: how many layers GPTQ re-rounded and how much of nearest's layer error they kept.
std::string describe_rounding(RoundingState& s);

struct RoundingState {
  LayerInputs inputs;
  struct Rounded {
    Tensor codes;
    QuantParams q;
    std::optional<Tensor> bias;  // the corrected bias, when the rounding was applied
    RoundingOutcome outcome;
  };
  std::mutex mu;
  std::map<std::string, Rounded> rounded;  // by node name and how its codes were made
  std::map<std::string, RoundingOutcome> outcomes;  // by node name: its latest rounding
};

}  // namespace lowbit
