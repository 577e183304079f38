#pragma once
// Shared pieces of the lowbit command line: model options and how each command registers.
#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lowbit/api/build.h"
#include "lowbit/io/image.h"
#include "lowbit/io/samples.h"
#include "lowbit/quant/guard.h"
#include "lowbit/runtime/compiled_model.h"

namespace lowbit::cli {

struct ModelOptions {
  std::string model;
  std::vector<std::string> input_shapes;
  int threads = 0;
  std::string target;  // empty: the host (or, for an artifact, the target it was compiled for)
  std::string precision = "fp32";
  bool no_optimize = false;
  // int8 (quantized on the fly; an .lbm artifact is already quantized)
  std::string calibration = "minmax";
  int calib_samples = 8;
  std::string calib_data;
  // how images (--calib-data, run --input) become tensors: io/image.h
  std::vector<float> norm_mean{0.485f, 0.456f, 0.406f};
  std::vector<float> norm_std{0.229f, 0.224f, 0.225f};
  std::string resize = "stretch";
  std::string on_slow = "fp32";
  // below 8 bits (quant/quantize.h)
  std::string keep_8bit = "first,last";
  std::string layer_precision;  // NODE=PRECISION,...
  std::string mode = "native";
  std::string weight_scale = "auto";
  int group_size = 0;
  std::string rounding = "nearest";
  bool equalize = false;
  bool autotune = false;
  std::string max_memory;  // empty: the machine's physical memory
};

// Adds MODEL and the options every model command shares.
void add_model_options(CLI::App& cmd, ModelOptions& o);
// The library's build options (api/build.h) the command line asks for.
BuildOptions build_options(const ModelOptions& o, bool foreign_ok = false);
// The library's build_model (api/build.h) with the options parsed from the command line.
// `foreign_ok`: allow a target the host cannot run.
BuiltModel build_model(const ModelOptions& o, bool foreign_ok = false);
inline std::unique_ptr<CompiledModel> compile_model(const ModelOptions& o, bool foreign_ok = false) {
  return build_model(o, foreign_ok).model;
}
ImagePreprocess image_preprocess(const ModelOptions& o);
// The quantizer's options the model options ask for (precision, calibration, widths, storage).
QuantizeOptions quantize_options(const ModelOptions& o);
// Seeded synthetic inputs of the model's input shapes (io/synthetic.h).
std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed = 42);
std::string human_bytes(int64_t bytes);

void register_run(CLI::App& app);
void register_bench(CLI::App& app);
void register_explain(CLI::App& app);
void register_inspect(CLI::App& app);
void register_targets(CLI::App& app);
void register_ops(CLI::App& app);
void register_export(CLI::App& app);
void register_quantize(CLI::App& app);
void register_compare(CLI::App& app);
void register_sensitivity(CLI::App& app);
void register_microbench(CLI::App& app);
void register_report(CLI::App& app);

}  // namespace lowbit::cli
