// lowbit quantize / compare: make an int8 artifact; measure what quantization cost in accuracy.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "lowbit/api/compare.h"
#include "lowbit/api/mixed_precision.h"
#include "lowbit/artifact/artifact.h"
#include "lowbit/common/error.h"
#include "lowbit/io/npy.h"
#include "lowbit/io/synthetic.h"

namespace lowbit::cli {

namespace {

struct QuantizeOpts {
  ModelOptions m;
  std::string out;
  int bits = 0, weight_bits = 0, act_bits = 0;  // 0: not given
  bool prepack = false;
  // --precision auto
  double max_drop = 0.01;
  std::string metric = "cosine", objective = "latency", allow = "fp32,int8,w4a8", eval_data;
  int eval_samples = 8;
  float mask_threshold = kDefaultMaskThreshold;
};

void write_artifact(const QuantizeOpts& o, BuiltModel b, std::chrono::steady_clock::time_point t0) {
  const ModelOptions& m = o.m;
  nlohmann::json meta = artifact_metadata(b, std::filesystem::path(m.model).filename().string());
  meta["mode"] = m.mode;
  meta["keep_8bit"] = m.keep_8bit;
  meta["calibration"] = m.calibration;
  meta["calib_samples"] = m.calib_samples;
  meta["calib_data"] = m.calib_data.empty() ? "synthetic" : "npy folder";
  meta["autotuned"] = m.autotune;
  // The compiled graph: optimised, quantized, and with the kernels --autotune pinned.
  int prepacked = 0;
  int64_t prepacked_bytes = 0;
  if (o.prepack) {
    meta["prepacked"] = true;
    save_artifact(o.out, b.model->graph_with_prepacked_weights(&prepacked, &prepacked_bytes), meta.dump());
  } else {
    save_artifact(o.out, b.model->graph(), meta.dump());
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  int64_t total = 0;
  std::map<std::string, int64_t> per;
  for (const Value& v : b.model->graph().values)
    if (v.constant) per[dtype_name(v.dtype)] += v.constant->nbytes(), total += v.constant->nbytes();
  std::printf("wrote %s (%s) in %.1f s: weights %s", o.out.c_str(),
              human_bytes(static_cast<int64_t>(std::filesystem::file_size(o.out))).c_str(), ms / 1e3,
              human_bytes(total).c_str());
  for (auto& [dt, bytes] : per) std::printf(" [%s %s]", dt.c_str(), human_bytes(bytes).c_str());
  std::printf("\n");
  if (o.prepack)
    std::printf("prepacked: the weights of %d node(s) also in their kernels' layouts for %s (%s); a compile on "
                "another kind of host packs them as usual\n",
                prepacked, b.model->target().name.c_str(), human_bytes(prepacked_bytes).c_str());
}

// --precision auto (api/mixed_precision.h): the layers' precisions chosen against the budget.
BuiltModel quantize_auto(const QuantizeOpts& o) {
  AutoPrecisionOptions a;
  a.max_drop = o.max_drop;
  a.metric = parse_accuracy_metric(o.metric);
  a.objective = parse_precision_objective(o.objective);
  std::stringstream list(o.allow);
  for (std::string p; std::getline(list, p, ',');)
    if (!p.empty()) a.allow.push_back(parse_precision(p));
  a.eval_samples = o.eval_samples;
  a.mask_threshold = o.mask_threshold;
  ModelOptions m = o.m;
  m.precision = "int8";  // the calibration options apply
  const BuildOptions bo = build_options(m, /*foreign_ok=*/true);
  if (!o.eval_data.empty()) {
    ModelOptions f = o.m;
    f.precision = "fp32";
    a.eval_inputs = load_samples(o.eval_data, build_model(f).model->graph(), o.eval_samples, image_preprocess(o.m));
  }
  AutoPrecisionResult r;
  BuiltModel b = build_auto_precision(bo, a, &r);
  std::map<std::string, int> count;
  for (auto& [node, p] : r.layers) count[p.name()]++;
  std::printf("precision auto: %zu layers:", r.layers.size());
  for (auto& [p, n] : count) std::printf(" %d %s", n, p.c_str());
  const bool by_ms = a.objective == PrecisionObjective::latency;
  std::printf("; %s %.3f%s against %.3f%s with every layer at %s; %s %.4g on %d input(s) (budget %g), %d evaluations\n",
              by_ms ? "layer time" : "weights", by_ms ? r.cost : r.cost / 1e6, by_ms ? " ms" : " MB",
              by_ms ? r.all_base_cost : r.all_base_cost / 1e6, by_ms ? " ms" : " MB", r.base.name().c_str(),
              o.metric.c_str(), r.drop, r.sensitivity.eval_inputs, a.max_drop, r.evaluations);
  for (auto& [node, p] : r.layers)
    if (p != r.base) std::printf("  %-32s %-6s %s\n", node.c_str(), p.name().c_str(), r.why.at(node).c_str());
  return b;
}

}  // namespace

void register_quantize(CLI::App& app) {
  using Opts = QuantizeOpts;
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("quantize", "calibrate and quantize a model; write an .lbm artifact");
  add_model_options(*cmd, o->m);
  cmd->add_option("-o,--output", o->out, "the .lbm artifact to write")->required();
  cmd->add_option("--bits", o->bits, "weight and activation bits: 8, 4, 2 or 1 (sets both; --precision wNaM also does; 1 = w1a1)");
  cmd->add_option("--weight-bits", o->weight_bits, "weight bits: 8, 4 or 2 (1 only with --act-bits 1)");
  cmd->add_option("--act-bits", o->act_bits, "activation bits: 8, 4 or 2 (1 only with --weight-bits 1)");
  cmd->add_flag("--prepack", o->prepack,
                "also store each conv kernel's weights in its own layout (a bigger file): compiled on the same "
                "kind of host (target, tile, threads-independent), the artifact's weights are read in place from "
                "its mapping instead of being packed again; elsewhere they are packed as usual");
  cmd->add_option("--max-drop", o->max_drop,
                  "--precision auto: the accuracy budget, as the --metric's drop against fp32 (default 0.01)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--metric", o->metric,
                  "--precision auto: cosine (1 - cosine), top1 (class disagreement), l2, or iou (1 - IoU of the "
                  "output's mask {y > --mask-threshold}: a detector's or segmenter's map)")
      ->check(CLI::IsMember({"cosine", "top1", "l2", "iou"}));
  cmd->add_option("--mask-threshold", o->mask_threshold,
                  "--metric iou: the output value above which a pixel is in the mask (default 0.5; PaddleOCR's "
                  "text detector: 0.3)");
  cmd->add_option("--objective", o->objective,
                  "--precision auto: minimise latency (each layer's measured time on the target) or size")
      ->check(CLI::IsMember({"latency", "size"}));
  cmd->add_option("--allow", o->allow, "--precision auto: the precisions a layer may get (default fp32,int8,w4a8)");
  cmd->add_option("--eval-data", o->eval_data,
                  "--precision auto: folder of .npy / PNG / JPEG inputs the budget is measured on (default: synthetic)");
  cmd->add_option("--eval-samples", o->eval_samples, "--precision auto: evaluation inputs (default 8)")
      ->check(CLI::PositiveNumber);
  cmd->callback([o, cmd] {
    auto t0 = std::chrono::steady_clock::now();
    ModelOptions m = o->m;
    if (m.precision == "auto") {
      if (o->bits || o->weight_bits || o->act_bits) throw Error("--precision auto with --bits / --weight-bits / --act-bits: choose one");
      write_artifact(*o, quantize_auto(*o), t0);
      return;
    }
    // --precision (default int8 here), then --bits, then --weight-bits / --act-bits refine it. An
    // explicit --precision fp32 writes the compiled fp32 graph (folded, fused, kernels pinned).
    const bool fp32_asked = cmd->get_option("--precision")->count() > 0 && m.precision == "fp32";
    if (fp32_asked && (o->bits || o->weight_bits || o->act_bits))
      throw Error("--precision fp32 with --bits / --weight-bits / --act-bits: choose one");
    Precision p = fp32_asked ? kFp32 : m.precision == "fp32" ? kInt8 : parse_precision(m.precision);
    if (o->bits) p = {weight_code_for_bits(o->bits), act_code_for_bits(o->bits)};
    if (o->weight_bits) p.weight = weight_code_for_bits(o->weight_bits);
    if (o->act_bits) p.act = act_code_for_bits(o->act_bits);
    if ((p.weight == DType::b1) != (p.act == DType::u1))
      throw Error("1 bit is w1a1 only (binary weights and activations: the XOR-popcount kernels need both); got " +
                  std::string(p.weight == DType::b1 ? "1-bit weights with " + std::to_string(p.act_bits()) + "-bit activations"
                                                    : std::to_string(p.weight_bits()) + "-bit weights with 1-bit activations"));
    m.precision = p.name();
    write_artifact(*o, build_model(m, /*foreign_ok=*/true), t0);
  });
}

void register_compare(CLI::App& app) {
  struct Opts {
    ModelOptions m;
    std::string inputs;
    int samples = 16;
    int layers = 15;
    std::string json;
    std::optional<float> mask_threshold;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("compare", "accuracy of the quantized model against fp32, overall and per layer");
  add_model_options(*cmd, o->m);
  cmd->add_option("--inputs", o->inputs,
                  "folder of .npy / PNG / JPEG inputs (default: seeded synthetic, not the calibration ones)");
  cmd->add_option("--samples", o->samples, "synthetic inputs to compare on (default 16)")->check(CLI::PositiveNumber);
  cmd->add_option("--layers", o->layers, "worst layers to list by SQNR (default 15)");
  cmd->add_option("--json", o->json, "also write the comparison (every layer's SQNR) as JSON to this file");
  cmd->add_option("--mask-threshold", o->mask_threshold,
                  "also the IoU of the outputs' masks {y > T} (a detector's or segmenter's map; PaddleOCR's text "
                  "detector: 0.3)");
  cmd->callback([o] {
    ModelOptions f = o->m;
    f.precision = "fp32";
    BuiltModel fp = build_model(f);
    if (o->m.precision == "fp32") o->m.precision = "int8";
    BuiltModel q = build_model(o->m);
    // Below 8 bits, the same comparison against int8 too: what the narrower codes cost beyond int8's.
    const bool vs_int8 = parse_precision(o->m.precision).subbyte();
    BuiltModel i8;
    if (vs_int8) {
      ModelOptions m8 = o->m;
      m8.precision = "int8";
      i8 = build_model(m8);
    }
    std::vector<std::vector<Tensor>> inputs;
    if (!o->inputs.empty()) inputs = load_samples(o->inputs, fp.model->graph(), 1 << 30, image_preprocess(o->m));
    else inputs = held_out_inputs(fp.model->graph(), o->samples);
    const Comparison c =
        compare_models(fp, q, vs_int8 ? &i8 : nullptr, inputs, o->mask_threshold.value_or(kDefaultMaskThreshold));
    const OutputAgreement& a = c.vs_fp32;
    std::printf("%s %s vs fp32 over %d input(s): cosine mean %.5f (min %.5f)  rel L2 %.4f  top-1 agree %.1f%%  "
                "top-5 agree %.1f%%\n",
                o->m.model.c_str(), q.precision.c_str(), c.inputs, a.cosine_mean, a.cosine_min, a.rel_l2_mean,
                100.0 * a.top1, 100.0 * a.top5);
    if (o->mask_threshold)
      std::printf("%s %s vs fp32: mask IoU at %g mean %.4f (min %.4f)\n", o->m.model.c_str(), q.precision.c_str(),
                  *o->mask_threshold, a.mask_iou_mean, a.mask_iou_min);
    if (c.has_vs_int8)
      std::printf("%s %s vs int8 over %d input(s): cosine mean %.5f (min %.5f)  top-1 agree %.1f%%\n",
                  o->m.model.c_str(), q.precision.c_str(), c.inputs, c.vs_int8.cosine_mean, c.vs_int8.cosine_min,
                  100.0 * c.vs_int8.top1);
    // Said plainly where the numbers mean the model no longer works: below 0.9 cosine the top-1
    // class rarely survives (w2a2 and w1a1 post-training quantization land at 0.5-0.7).
    if (a.cosine_mean < 0.9)
      std::printf("%s %s: accuracy destroyed (cosine %.2f against fp32, top-1 agreement %.0f%%): post-training "
                  "quantization to %s does not preserve this model; %s\n",
                  o->m.model.c_str(), q.precision.c_str(), a.cosine_mean, 100.0 * a.top1, q.precision.c_str(),
                  q.precision == "w1a1" ? "binary networks are trained binary (Bi-Real, XNOR-Net); use this build "
                                          "for speed studies"
                                        : "keep more layers at 8 bits (--keep-8bit) or use a wider precision");
    std::printf("\nper-layer SQNR (dB, lowest first; quantized output vs fp32):\n");
    for (size_t i = 0; i < c.layers.size() && static_cast<int>(i) < o->layers; ++i)
      std::printf("  %7.2f  %-40s %s\n", c.layers[i].sqnr_db, c.layers[i].value.c_str(), c.layers[i].op.c_str());
    if (!o->json.empty()) {
      nlohmann::json j = comparison_json(c);
      j["model"] = o->m.model;
      j["precision"] = q.precision;
      std::ofstream out(o->json);
      if (!out) throw Error("cannot write '" + o->json + "'");
      out << j.dump(2) << "\n";
    }
  });
}

}  // namespace lowbit::cli
