// lowbit sensitivity: each layer quantized alone at each precision, and what it costs and saves
// (api/sensitivity.h).
#include <cstdio>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.h"
#include "lowbit/api/sensitivity.h"
#include "lowbit/common/error.h"

namespace lowbit::cli {

void register_sensitivity(CLI::App& app) {
  struct Opts {
    ModelOptions m;
    std::string precisions = "int8,w4a8";
    std::string eval_data;
    int eval_samples = 8;
    int timing_runs = 5;
    std::string rank = "bytes";
    int rows = 30;
    std::string json;
    std::optional<float> mask_threshold;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "sensitivity", "each Conv/Gemm quantized alone at each precision: damage to the output, SQNR, bytes and time");
  add_model_options(*cmd, o->m);
  cmd->add_option("--precisions", o->precisions, "comma-separated precisions to measure (default int8,w4a8)");
  cmd->add_option("--eval-data", o->eval_data,
                  "folder of .npy / PNG / JPEG inputs to measure the damage on (default: seeded synthetic inputs)");
  cmd->add_option("--eval-samples", o->eval_samples, "inputs to measure on (default 8)")->check(CLI::PositiveNumber);
  cmd->add_option("--timing-runs", o->timing_runs, "runs per precision for the per-layer times (default 5)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--rank", o->rank, "order of the table: bytes (damage per byte saved) or ms (per millisecond saved)")
      ->check(CLI::IsMember({"bytes", "ms"}));
  cmd->add_option("--rows", o->rows, "rows of the table to print (default 30; 0: all)");
  cmd->add_option("--json", o->json, "write every layer at every precision as JSON to this file");
  cmd->add_option("--mask-threshold", o->mask_threshold,
                  "also each choice's mask IoU against fp32, the output as the mask {y > T} (a detector's map)");
  cmd->callback([o] {
    SensitivityOptions s;
    std::stringstream list(o->precisions);
    for (std::string p; std::getline(list, p, ',');)
      if (!p.empty()) s.precisions.push_back(parse_precision(p));
    if (s.precisions.empty()) throw Error("--precisions: no precision given");
    ModelOptions m = o->m;
    m.precision = s.precisions[0].name();  // the calibration options apply
    BuildOptions b = build_options(m);
    b.quantize.progress = nullptr;
    s.eval_samples = o->eval_samples;
    s.timing_runs = o->timing_runs;
    if (o->mask_threshold) s.mask_threshold = *o->mask_threshold;
    if (!o->eval_data.empty()) {
      // The inputs' shapes are the model's: load them against the fp32 graph.
      ModelOptions f = o->m;
      f.precision = "fp32";
      BuiltModel fp = build_model(f);
      s.eval_inputs = load_samples(o->eval_data, fp.model->graph(), o->eval_samples, image_preprocess(o->m));
    }
    const Sensitivity r = analyze_sensitivity(b, s);
    std::printf("%s on %s: %zu layers, each quantized alone (with its activation) at %s; damage = 1 - cosine of "
                "the output against fp32 over %d %s input(s); time: the layer in the model quantized throughout\n\n",
                r.model.c_str(), r.target.c_str(), r.layers.size(), o->precisions.c_str(), r.eval_inputs,
                o->eval_data.empty() ? "synthetic" : "given");
    const bool by_ms = o->rank == "ms";
    const auto ranked = rank_choices(r, by_ms ? SensitivityRank::per_ms : SensitivityRank::per_byte);
    std::printf("%-4s %-34s %-6s %-6s %9s %8s %6s %s%7s %19s %17s %12s\n", "#", "layer", "op", "prec", "damage",
                "rel L2", "top-1", o->mask_threshold ? "    IoU " : "", "SQNR", "weights fp32->q", "ms fp32->q",
                by_ms ? "damage/ms" : "damage/MB");
    for (size_t i = 0; i < ranked.size() && (o->rows <= 0 || static_cast<int>(i) < o->rows); ++i) {
      const SensitivityChoice& c = ranked[i];
      const double saved = by_ms ? c.ms_saved : c.bytes_saved / 1e6;
      char per[32];
      if (saved > 0) std::snprintf(per, sizeof per, "%.3g", c.damage / saved);
      else std::snprintf(per, sizeof per, "no saving");
      char iou[16] = "";
      if (o->mask_threshold) std::snprintf(iou, sizeof iou, " %7.4f", c.at->mask_iou);
      std::printf("%-4zu %-34.34s %-6s %-6s %9.2e %8.4f %5.0f%%%s %7.2f %8s->%-9s %7.3f->%-8.3f %12s\n", i + 1,
                  c.layer->node.c_str(), c.layer->op.c_str(), c.at->precision.c_str(), c.damage, c.at->rel_l2,
                  100 * c.at->top1, iou, c.at->sqnr_db, human_bytes(c.layer->fp32_weight_bytes).c_str(),
                  human_bytes(c.at->weight_bytes).c_str(), c.layer->fp32_ms, c.at->ms, per);
    }
    if (!o->json.empty()) {
      std::ofstream out(o->json);
      if (!out) throw Error("cannot write '" + o->json + "'");
      out << sensitivity_json(r).dump(2) << "\n";
    }
  });
}

}  // namespace lowbit::cli
