#include "cli.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/frontend/load_model.h"
#include "lowbit/io/npy.h"
#include "lowbit/io/synthetic.h"

namespace lowbit::cli {

void add_model_options(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("MODEL", o.model, "an .onnx file or a zoo model (resnet18, resnet50, mobilenet_v2)")->required();
  cmd.add_option("--input-shape", o.input_shapes, "fix an input's dynamic dims: name=1x3x224x224 (repeatable)");
  cmd.add_option("--threads", o.threads, "threads inside operators (default: all cores)");
  cmd.add_option("--max-memory", o.max_memory,
                 "refuse a model whose activations need more than this (16G, 512M; default: physical memory)")
      ->check([](const std::string& s) { return parse_memory_size(s) > 0 ? std::string() : "expected a size: 16G, 512M, 1048576"; });
  cmd.add_option("--target", o.target,
                 "target to compile for (see `lowbit targets`; default: host, or an artifact's own target)");
  cmd.add_option("--precision", o.precision,
                 std::string("quantized on the fly with calibration unless fp32: ") + precision_help() +
                     "; `quantize --precision auto` chooses one per layer against --max-drop")
      ->check([](const std::string& s) {
        if (s == "auto") return std::string();
        try {
          parse_precision(s);
          return std::string();
        } catch (const Error& e) {
          return std::string(e.what());
        }
      });
  cmd.add_option("--keep-8bit", o.keep_8bit,
                 "below 8 bits: Conv/Gemm nodes kept at w8a8: first,last (default: stem and classifier), none, "
                 "or node names (may mix)");
  cmd.add_option("--layer-precision", o.layer_precision,
                 "Conv/Gemm nodes at a precision of their own: NODE=PRECISION,... (fp32 keeps a node unquantized; "
                 "`lowbit sensitivity` says which layers can take what)");
  cmd.add_option("--mode", o.mode, "below 8 bits: native (packed sub-byte weights) or logical (codes in int8 storage)")
      ->check(CLI::IsMember({"native", "logical"}));
  cmd.add_option("--weight-scale", o.weight_scale,
                 "per-channel weight scales: auto (max |w| at 8 bits, MSE clipping search below), max or mse")
      ->check(CLI::IsMember({"auto", "max", "mse"}));
  cmd.add_option("--group-size", o.group_size,
                 "group-wise weight scales: one per G input channels of each output channel and tap "
                 "(0: one per output channel)");
  cmd.add_option("--rounding", o.rounding,
                 "weight codes: nearest, or gptq (chosen against each layer's calibration inputs, with bias "
                 "correction; for 4 bits and below above all: docs/accuracy.md)")
      ->check(CLI::IsMember({"nearest", "gptq"}));
  cmd.add_flag("--equalize", o.equalize,
               "cross-layer equalization: a Conv (+ ReLU) -> Conv pair's channels rescaled to balance activation and "
               "weight ranges, pair by pair where the readers' measured error drops (docs/accuracy.md)");
  cmd.add_flag("--no-optimize", o.no_optimize, "skip BN folding and fusion (debugging)");
  cmd.add_option("--calibration", o.calibration,
                 "activation ranges: minmax, percentile, entropy, mse, or auto (per tensor, whichever codes it with the "
                 "least error as its readers weigh it)")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy", "mse", "auto"}));
  cmd.add_option("--calib-samples", o.calib_samples, "int8: calibration samples (default 8)")->check(CLI::PositiveNumber);
  cmd.add_option("--calib-data", o.calib_data,
                 "int8: folder of .npy and/or .png/.jpg calibration inputs (default: seeded synthetic)");
  cmd.add_option("--mean", o.norm_mean, "images: per-channel mean on the 0..1 scale, R,G,B (default ImageNet's)")
      ->delimiter(',')->expected(3);
  cmd.add_option("--std", o.norm_std, "images: per-channel std on the 0..1 scale, R,G,B (default ImageNet's)")
      ->delimiter(',')->expected(3);
  cmd.add_option("--resize", o.resize, "images: stretch to HxW, or pad (keep aspect, height H, zeros right to W)")
      ->check(CLI::IsMember({"stretch", "pad"}));
  cmd.add_option("--on-slow", o.on_slow, "int8 node without a fast kernel: fp32 (keep fp32, warn), error, allow")
      ->check(CLI::IsMember({"fp32", "error", "allow"}));
  cmd.add_flag("--autotune", o.autotune, "time every applicable kernel per node on this host and keep the fastest");
}

ImagePreprocess image_preprocess(const ModelOptions& o) {
  if (o.norm_mean.size() != 3 || o.norm_std.size() != 3) throw Error("--mean and --std take three values: R,G,B");
  ImagePreprocess p;
  std::copy(o.norm_mean.begin(), o.norm_mean.end(), p.mean.begin());
  std::copy(o.norm_std.begin(), o.norm_std.end(), p.std.begin());
  p.resize = parse_resize_mode(o.resize);
  return p;
}

QuantizeOptions quantize_options(const ModelOptions& o) {
  QuantizeOptions q;
  q.precision = parse_precision(o.precision);
  q.method = parse_calibration_method(o.calibration);
  q.mode = parse_storage_mode(o.mode);
  q.weight_scale = parse_weight_scale(o.weight_scale);
  q.keep_8bit = parse_keep_8bit(o.keep_8bit);
  q.layer_precision = parse_layer_precisions(o.layer_precision);
  q.group_size = o.group_size;
  q.rounding = parse_rounding(o.rounding);
  q.equalize = o.equalize;
  return q;
}

BuildOptions build_options(const ModelOptions& o, bool foreign_ok) {
  if (o.precision == "auto")
    throw Error("--precision auto chooses each layer's precision in `lowbit quantize MODEL --precision auto -o M.lbm`; "
                "the other commands then take M.lbm");
  BuildOptions b;
  b.model = o.model;
  for (auto& s : o.input_shapes) b.input_shapes.insert(parse_input_shape(s));
  b.compile.threads = o.threads;
  b.compile.optimize = !o.no_optimize;
  b.compile.autotune = o.autotune;
  if (!o.max_memory.empty()) b.compile.max_memory = parse_memory_size(o.max_memory);
  if (!o.target.empty()) b.target = parse_target(o.target);
  b.allow_foreign_target = foreign_ok;
  b.precision = parse_precision(o.precision);
  b.on_slow = parse_slow_policy(o.on_slow);
  if (b.precision.quantized()) {
    b.quantize = quantize_options(o);
    b.quantize.synthetic_samples = o.calib_samples;
    b.calibration_folder = o.calib_data;
    b.preprocess = image_preprocess(o);
    bool tty = isatty(2);
    b.quantize.progress = [tty](int done, int total) {
      if (!tty && done != total) return;
      int w = 30, fill = done * w / total;
      std::fprintf(stderr, "\rcalibrating [%s%s] %d/%d%s", std::string(static_cast<size_t>(fill), '#').c_str(),
                   std::string(static_cast<size_t>(w - fill), '.').c_str(), done, total, done == total ? "\n" : "");
    };
  }
  return b;
}

BuiltModel build_model(const ModelOptions& o, bool foreign_ok) {
  try {
    return lowbit::build_model(build_options(o, foreign_ok));
  } catch (const Error& e) {
    // The library names its inputs generically; the CLI user typed these flags.
    std::string m = e.what();
    if (!o.calib_data.empty() && m.rfind("calibration data '", 0) == 0) throw Error("--calib-data: " + m);
    throw;
  }
}

std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed) { return synthetic_inputs(g, seed); }

std::string human_bytes(int64_t b) {
  char buf[64];
  if (b >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.2f MB", static_cast<double>(b) / 1e6);
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KB", static_cast<double>(b) / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
}

}  // namespace lowbit::cli
