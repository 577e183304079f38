#pragma once
// Post-training quantization: calibrate the optimised fp32 graph, then rewrite it into the
// quantized domain (QConv / QGemm / QAdd, u8 pooling and reshapes) with QuantizeLinear only where
// fp32 enters and DequantizeLinear only where fp32 is needed again (graph outputs, ops without a
// quantized form).
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lowbit/quant/calibration.h"
#include "lowbit/quant/precision.h"
#include "lowbit/quant/rounding.h"
#include "lowbit/runtime/compiled_model.h"

namespace lowbit {

// native: sub-byte weights stored packed (two or four per byte) in the graph and the artifact;
// logical: the same codes in int8 storage (the study's control experiment). Outputs are identical.
enum class StorageMode { native, logical };
StorageMode parse_storage_mode(const std::string& s);

// How per-channel weight scales are chosen. automatic: max |w| at 8 bits (int8 stays as it always
// was), the MSE clipping search below 8 bits.
enum class WeightScale { automatic, max, mse };
WeightScale parse_weight_scale(const std::string& s);

// Which Conv / Gemm nodes stay 8-bit (w8a8) when the precision is narrower: `first` = the first
// Conv or Gemm in graph order (the stem), `last` = the last one (the classifier), plus named nodes.
// Parsed from "first,last" (default), "none", or a list that may mix both forms.
struct Keep8Bit {
  bool first = true, last = true;
  std::set<std::string> nodes;
};
Keep8Bit parse_keep_8bit(const std::string& s);

// Per-layer precisions: "conv1=fp32,layer3.0.conv2=int8,fc=w4a8" (Conv / Gemm node names).
std::map<std::string, Precision> parse_layer_precisions(const std::string& s);
std::string layer_precisions_str(const std::map<std::string, Precision>& m);

struct QuantizeOptions {
  Precision precision = kInt8;  // of every quantized Conv / Gemm not kept 8-bit
  StorageMode mode = StorageMode::native;
  WeightScale weight_scale = WeightScale::automatic;
  int group_size = 0;           // 0: per output channel; G > 0: a scale per G input channels and tap
  Keep8Bit keep_8bit;
  CalibrationMethod method = CalibrationMethod::minmax;
  std::vector<std::vector<Tensor>> samples;  // calibration inputs; empty: synthetic
  int synthetic_samples = 8;
  uint64_t seed = 1000;                      // synthetic sample i uses seed + i
  std::function<void(int, int)> progress;    // called after each calibration pass over a sample
  std::set<std::string> keep_fp32;           // node names (of the fp32 graph) not to quantize
  // Conv / Gemm nodes at a precision of their own (fp32: not quantized), over `precision` and
  // keep_8bit; what --layer-precision and --precision auto set. Widths are per layer: a node's
  // input activations get the widest width any quantized reader asks for.
  std::map<std::string, Precision> layer_precision;
  // How weight codes are rounded (quant/rounding.h; binary weights are signs either way). gptq needs the layers' input stats:
  // prepare_rounding measures them over the calibration samples into rounding_state, which then
  // also keeps what each layer's rounding chose and measured.
  Rounding rounding = Rounding::nearest;
  std::shared_ptr<RoundingState> rounding_state;
  // Cross-layer equalization (quant/equalize.h) of the fp32 graph before calibration, pair by pair
  // where the readers' measured error drops; done where quantizing starts (api/build.h).
  bool equalize = false;
};

// For --rounding gptq: the input stats of every Conv / Gemm whose weights get (non-binary) codes,
// over the options' samples (or the seeded synthetic ones calibration uses), into
// opts.rounding_state (every_layer: of every Conv / Gemm, for callers that vary the precisions).
// Nothing for nearest, or when they are already there.
void prepare_rounding(CompiledModel& fp32, QuantizeOptions& opts, bool every_layer = false);

// The precision a Conv / Gemm node gets: layer_precision, else int8 when kept 8-bit, else
// opts.precision.
Precision node_precision(const std::string& node, const QuantizeOptions& opts, const std::set<std::string>& kept_8bit);

// Rewrites `fp32.graph()` (already validated and optimised) into a quantized graph. The result
// is not yet validated; compile it with CompiledModel::compile.
Graph quantize_model(CompiledModel& fp32, const QuantizeOptions& opts);

// The samples calibration runs on: the options' own, else opts.synthetic_samples seeded ones.
std::vector<std::vector<Tensor>> calibration_samples(const Graph& g, const QuantizeOptions& opts);

// Calibration with the options' samples (or seeded synthetic ones); each activation's range is
// chosen for the code width it will have (activation_widths).
std::vector<Range> calibrate_model(CompiledModel& fp32, const QuantizeOptions& opts);

// The rewrite alone, given calibrated ranges per value of `g`.
Graph quantize_graph(const Graph& g, const std::vector<Range>& ranges, const QuantizeOptions& opts);
inline Graph quantize_graph(const Graph& g, const std::vector<Range>& ranges, const std::set<std::string>& keep_fp32) {
  QuantizeOptions o;
  o.keep_fp32 = keep_fp32;
  return quantize_graph(g, ranges, o);
}

// The Conv / Gemm nodes of `g` that opts.keep_8bit keeps at w8a8, each with why ("first conv",
// "classifier", "--keep-8bit"); empty when the precision is int8.
std::vector<std::pair<std::string, std::string>> nodes_kept_8bit(const Graph& g, const QuantizeOptions& opts);

// Per value of `g`: the activation code type it gets (u8, u4, u2): the widest any quantized
// consumer asks for (a Conv / Gemm its precision's activations; Add, pooling and reshapes what
// their output gets); u8 for values without a quantized consumer.
std::vector<DType> activation_widths(const Graph& g, const QuantizeOptions& opts);

// Per output channel (axis 0), symmetric (zero point 0), codes of type `code` (i8, i4, i2) stored
// as `storage` (the code type itself, packed, or i8). i8 codes with the max rule are the int8
// scheme: s = max|w| / 127, codes in [-127, 127]. The MSE rule searches s per channel for the
// least squared error over the code range [qmin, qmax].
// block_size > 0: group-wise scales, a scale per block_size input channels of each output channel and
// tap (QuantParams::block_size), for weights of rank >= 2.
Tensor quantize_weights(const Tensor& w, DType code, WeightScale rule, DType storage, QuantParams& q,
                        int64_t block_size = 0);
inline Tensor quantize_weights_per_channel(const Tensor& w, QuantParams& q) {
  return quantize_weights(w, DType::i8, WeightScale::max, DType::i8, q);
}

}  // namespace lowbit
