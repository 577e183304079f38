#include "cli.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "lowbit/common/error.h"
#include "lowbit/artifact/artifact.h"
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
                 std::string("quantized on the fly with calibration unless fp32: ") + precision_help())
      ->check([](const std::string& s) {
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
  cmd.add_option("--mode", o.mode, "below 8 bits: native (packed sub-byte weights) or logical (codes in int8 storage)")
      ->check(CLI::IsMember({"native", "logical"}));
  cmd.add_option("--weight-scale", o.weight_scale,
                 "per-channel weight scales: auto (max |w| at 8 bits, MSE clipping search below), max or mse")
      ->check(CLI::IsMember({"auto", "max", "mse"}));
  cmd.add_option("--group-size", o.group_size,
                 "group-wise weight scales: one per G input channels of each output channel and tap "
                 "(0: one per output channel)");
  cmd.add_flag("--no-optimize", o.no_optimize, "skip BN folding and fusion (debugging)");
  cmd.add_option("--calibration", o.calibration, "int8: minmax, percentile, entropy or mse")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy", "mse"}));
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

Tensor load_input(const std::string& path, const Graph& g, size_t index, const ImagePreprocess& pre) {
  if (is_image_file(path)) return load_image_tensor(path, g.value(g.inputs[index]).shape, pre);
  return load_npy(path);
}

std::vector<std::vector<Tensor>> load_samples(const std::string& dir, const Graph& g, int limit,
                                              const ImagePreprocess& pre) {
  if (g.inputs.size() != 1) throw Error("--calib-data needs a model with one input");
  std::vector<std::string> files;
  if (!std::filesystem::is_directory(dir)) throw Error("--calib-data '" + dir + "' is not a folder");
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".npy" || is_image_file(e.path().string())) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw Error("--calib-data '" + dir + "' holds no .npy, .png, .jpg or .jpeg files");
  std::vector<std::vector<Tensor>> samples;
  for (auto& f : files) {
    if (static_cast<int>(samples.size()) >= limit) break;
    Tensor t = load_input(f, g, 0, pre);
    const Value& in = g.value(g.inputs[0]);
    if (t.shape() != in.shape)
      throw Error("calibration sample '" + f + "' is " + shape_str(t.shape()) + ", the model takes " +
                  shape_str(in.shape));
    samples.push_back({t});
  }
  return samples;
}

QuantizeOptions quantize_options(const ModelOptions& o) {
  QuantizeOptions q;
  q.precision = parse_precision(o.precision);
  q.method = parse_calibration_method(o.calibration);
  q.mode = parse_storage_mode(o.mode);
  q.weight_scale = parse_weight_scale(o.weight_scale);
  q.keep_8bit = parse_keep_8bit(o.keep_8bit);
  q.group_size = o.group_size;
  return q;
}

BuiltModel build_model(const ModelOptions& o, bool foreign_ok) {
  std::map<std::string, Shape> shapes;
  for (auto& s : o.input_shapes) shapes.insert(parse_input_shape(s));
  CompileOptions opts;
  opts.target = parse_target(o.target);
  opts.threads = o.threads;
  opts.optimize = !o.no_optimize;
  opts.allow_foreign_target = foreign_ok;
  opts.autotune = o.autotune;
  if (!o.max_memory.empty()) opts.max_memory = parse_memory_size(o.max_memory);
  BuiltModel b;
  b.precision = o.precision;
  if (is_artifact_file(o.model)) {
    Artifact a = load_artifact(o.model);
    auto meta = nlohmann::json::parse(a.metadata_json);
    b.precision = meta.value("precision", "fp32");
    // An artifact runs for the target it was compiled for unless --target says otherwise, so a
    // model made for cascadelake does not quietly fall back to other kernels on a lesser CPU.
    if (o.target.empty() && meta.contains("target_spec")) {
      opts.target = parse_target(meta["target_spec"]);
      opts.target.name = meta.value("target", "?") + " (the artifact's target)";
    }
    b.graph = a.graph;
    b.model = CompiledModel::compile(std::move(a.graph), opts);
    return b;
  }
  Graph g = load_model(o.model, shapes);
  const Precision precision = parse_precision(o.precision);
  b.precision = precision.name();
  if (!precision.quantized()) {
    b.graph = g;
    b.model = CompiledModel::compile(std::move(g), opts);
    return b;
  }
  // int8: the fp32 model must run here to calibrate, so compile it for the host.
  CompileOptions fopts = opts;
  fopts.target = host_target();
  fopts.allow_foreign_target = false;
  fopts.optimize = true;
  fopts.autotune = false;
  fopts.fuse_post_ops = false;  // calibration reads each conv's output before its activation
  auto fp32 = CompiledModel::compile(std::move(g), fopts);
  QuantizeOptions q = quantize_options(o);
  q.synthetic_samples = o.calib_samples;
  if (!o.calib_data.empty())
    q.samples = load_samples(o.calib_data, fp32->graph(), o.calib_samples, image_preprocess(o));
  bool tty = isatty(2);
  q.progress = [tty](int done, int total) {
    if (!tty && done != total) return;
    int w = 30, fill = done * w / total;
    std::fprintf(stderr, "\rcalibrating [%s%s] %d/%d%s", std::string(static_cast<size_t>(fill), '#').c_str(),
                 std::string(static_cast<size_t>(w - fill), '.').c_str(), done, total, done == total ? "\n" : "");
  };
  SlowPolicy policy = parse_slow_policy(o.on_slow);
  if (precision.subbyte()) {
    auto kept = nodes_kept_8bit(fp32->graph(), q);
    std::string list;
    for (auto& [node, why] : kept) list += (list.empty() ? "" : ", ") + node + " (" + why + ")";
    std::fprintf(stderr, "lowbit: %s: %zu node(s) kept at 8 bits%s%s\n", b.precision.c_str(), kept.size(),
                 kept.empty() ? "" : ": ", list.c_str());
  }
  if (q.group_size > 0)
    // Measured (Zen 4, AVX-512 VNNI, ResNet-50 w4a4): 56 ms at group size 32 and 47 ms at 128, against
    // 26 ms with a scale per output channel; each group's int32 sums leave the tile to be scaled on
    // their own (docs/subbyte.md).
    std::fprintf(stderr,
                 "lowbit: note: --group-size %d: a scale per %d input channels and tap, for accuracy; each group's "
                 "sums are scaled on their own, which costs speed (ResNet-50 w4a4 ran 1.8-2.2x slower than with a "
                 "scale per output channel on AVX-512 VNNI), and convs whose input channels the group size does "
                 "not divide run the reference kernel or fp32\n",
                 q.group_size, q.group_size);
  QuantizedBuild qb = build_quantized(*fp32, opts, q, policy);
  if (!qb.slow.empty()) std::fprintf(stderr, "lowbit: warning: %s\n", describe_slow_nodes(qb.slow, policy, opts.target.name).c_str());
  for (const std::string& c : qb.constant_outputs) std::fprintf(stderr, "lowbit: warning: degenerate layer %s\n", c.c_str());
  if (!qb.subbyte_on_int8.empty())
    std::fprintf(stderr, "lowbit: note: %s\n",
                 describe_subbyte_on_int8(qb.subbyte_on_int8, policy, opts.target.name).c_str());
  b.graph = std::move(qb.graph);
  b.model = std::move(qb.model);
  b.slow = std::move(qb.slow);
  return b;
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
