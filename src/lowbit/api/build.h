#pragma once
// The library's front door: a model (an .onnx file, an .lbm artifact or a zoo name) and what to do
// with it in, a compiled model out. The CLI's model commands and embedding programs (the Python
// package, the C API) all come through here, so each decision (an artifact runs for its own
// target, the fp32 model calibrates on the host, what the guard reports) lives in one place.
// Warnings and notes go to the log sink (common/log.h).
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lowbit/io/image.h"
#include "lowbit/quant/equalize.h"
#include "lowbit/quant/guard.h"
#include "lowbit/quant/precision.h"
#include "lowbit/quant/quantize.h"
#include "lowbit/runtime/compiled_model.h"

namespace lowbit {

struct BuildOptions {
  std::string model;                          // .onnx path, .lbm path or zoo name
  std::string model_bytes;                    // or: an ONNX model's bytes (then `model` only names it)
  std::map<std::string, Shape> input_shapes;  // fix inputs' dynamic dims (not for artifacts)
  // Target, threads, optimisation, autotuning, memory cap. An artifact runs for the target it
  // was compiled for unless `target` is set.
  CompileOptions compile;
  std::optional<Target> target;    // empty: the host, or an artifact's own target
  bool allow_foreign_target = false;  // compile for a target this CPU cannot run (explain/inspect)
  Precision precision = kFp32;        // quantized on the fly (with calibration) unless fp32
  // The quantizer's options (its precision field is set from `precision`). Calibration samples:
  // quantize.samples, else `calibration_folder`, else quantize.synthetic_samples seeded ones.
  QuantizeOptions quantize;
  // Calibration samples by input name (the Python package's feeds), ordered into quantize.samples
  // once the model's inputs are known; a sample missing an input is an error naming it.
  std::vector<std::map<std::string, Tensor>> named_samples;
  std::string calibration_folder;  // .npy / PNG / JPEG files, one per sample (io/samples.h)
  ImagePreprocess preprocess;      // how images become tensors
  SlowPolicy on_slow = SlowPolicy::fp32;
};

struct BuiltModel {
  std::unique_ptr<CompiledModel> model;
  Graph graph;                 // what an artifact would store (the quantized graph when quantized)
  std::vector<SlowNode> slow;  // the guard's findings (quantized only)
  std::string precision;       // "fp32", "int8", "w4a8", ... (Precision::name)
  // Conv / Gemm nodes at a precision other than `precision`, and why: kept 8-bit (stem,
  // classifier), --layer-precision, or the mixed-precision search.
  std::map<std::string, std::pair<std::string, std::string>> layer_precision;  // node -> (precision, why)
  // What making it took: load, quantize (calibration included) and compile, in ms: the "init" a
  // benchmark reports beside steady-state latency (onnxruntime_perf_test's session creation).
  double build_ms = 0;
};

// Where quantizing starts: the fp32 model compiled on the host for calibration (activations not
// fused into convs, so every conv output can be measured), the quantizer's options with the
// calibration samples in input order, and the compile options for the target. build_model
// quantizes from it once; analyses that quantize one model many ways (api/sensitivity.h) reuse it.
struct QuantizationStart {
  std::unique_ptr<CompiledModel> fp32;  // equalized first when quantize.equalize (quant/equalize.h)
  std::vector<EqualizedPair> equalized;
  QuantizeOptions quantize;  // o.quantize with precision = o.precision and the samples
  CompileOptions compile;    // o.compile for o.target (or the host)
};
// Needs a quantized precision and an fp32 model (not an artifact, not a QDQ model).
QuantizationStart start_quantization(const BuildOptions& o);

// Loads, validates, optimises, quantizes (unless fp32) and dispatches. Throws lowbit::Error.
BuiltModel build_model(const BuildOptions& o);

// The metadata an artifact of `b` carries (save_artifact): what the loader reads (precision,
// target_spec, target) and what reports show (weight_bits, act_bits, source, kept_fp32, each node
// the guard kept in fp32 with its reason, layer_precision: each node at a precision of its own with
// why). Front ends add their own fields.
nlohmann::json artifact_metadata(const BuiltModel& b, const std::string& source);

}  // namespace lowbit
