#include "lowbit/api/mixed_precision.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "lowbit/api/compare.h"
#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/io/synthetic.h"

namespace lowbit {

AccuracyMetric parse_accuracy_metric(const std::string& s) {
  if (s == "cosine") return AccuracyMetric::cosine;
  if (s == "top1") return AccuracyMetric::top1;
  if (s == "l2") return AccuracyMetric::l2;
  if (s == "iou") return AccuracyMetric::iou;
  throw Error("unknown accuracy metric '" + s + "': expected cosine, top1, l2 or iou");
}

PrecisionObjective parse_precision_objective(const std::string& s) {
  if (s == "latency") return PrecisionObjective::latency;
  if (s == "size") return PrecisionObjective::size;
  throw Error("unknown objective '" + s + "': expected latency or size");
}

namespace {

double drop_of(const OutputAgreement& a, AccuracyMetric m) {
  switch (m) {
    case AccuracyMetric::cosine: return 1 - a.cosine_mean;
    case AccuracyMetric::top1: return 1 - a.top1;
    case AccuracyMetric::l2: return a.rel_l2_mean;
    case AccuracyMetric::iou: return 1 - a.mask_iou_mean;
  }
  return 0;
}

const char* metric_name(AccuracyMetric m) {
  switch (m) {
    case AccuracyMetric::cosine: return "cosine drop";
    case AccuracyMetric::top1: return "top-1 disagreement";
    case AccuracyMetric::l2: return "relative L2";
    case AccuracyMetric::iou: return "mask IoU loss";
  }
  return "?";
}

std::string format(const char* fmt, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

// One allowed precision of a layer: what it costs (ms or bytes) and the damage the layer alone does
// at it (sensitivity), in the budget's metric.
struct Candidate {
  Precision p;
  double cost, damage;
};

std::string cost_str(double cost, PrecisionObjective o) {
  return o == PrecisionObjective::latency ? format("%.3f ms", cost) : format("%.0f weight bytes", cost);
}

std::vector<std::vector<Tensor>> evaluation_inputs(const AutoPrecisionOptions& a, const Graph& g) {
  std::vector<std::vector<Tensor>> eval = a.eval_inputs;
  if (eval.empty()) eval = held_out_inputs(g, a.eval_samples);
  if (eval.empty()) throw Error("--precision auto: no evaluation inputs");
  return eval;
}

}  // namespace

// With --rounding gptq: o with the layers' input stats measured once, which the sensitivity table,
// every evaluation and the final build then share with the layers they rounded (each (layer,
// width) once). Measured on the torchvision ResNet-50: the search took 192 s when each stage
// measured and rounded on its own.
static BuildOptions with_rounding_state(const BuildOptions& o) {
  if (o.quantize.rounding == Rounding::nearest || o.quantize.rounding_state) return o;
  BuildOptions q = o;
  q.precision = kInt8;
  QuantizationStart st = start_quantization(q);
  prepare_rounding(*st.fp32, st.quantize, /*every_layer=*/true);
  BuildOptions r = o;
  r.quantize.rounding_state = st.quantize.rounding_state;
  return r;
}

AutoPrecisionResult choose_layer_precisions(const BuildOptions& given, const AutoPrecisionOptions& a) {
  const BuildOptions o = with_rounding_state(given);
  std::vector<Precision> allow = a.allow;
  if (allow.empty()) allow = {kFp32, kInt8, parse_precision("w4a8")};
  std::vector<Precision> quantized;
  bool fp32_allowed = false;
  for (const Precision& p : allow) {
    if (p.weight == DType::b1) throw Error("--allow: binary (w1a1) layers need the whole model binary");
    if (p.quantized()) quantized.push_back(p);
    else fp32_allowed = true;
  }
  if (quantized.empty()) throw Error("--allow: at least one quantized precision is needed (e.g. fp32,int8,w4a8)");
  if (a.max_drop < 0) throw Error("--max-drop must not be negative");

  AutoPrecisionResult r;
  if (a.objective == PrecisionObjective::latency && o.target && !host_target().missing(*o.target).empty())
    throw Error("--precision auto --objective latency measures each layer on the target, and " + o.target->name +
                " cannot run on this host: use --objective size, or choose on a machine of the target's kind");
  SensitivityOptions so;
  so.precisions = quantized;
  so.eval_inputs = a.eval_inputs;
  so.eval_samples = a.eval_samples;
  so.timing_runs = a.timing_runs;
  so.mask_threshold = a.mask_threshold;
  r.sensitivity = analyze_sensitivity(o, so);
  r.base = std::find(quantized.begin(), quantized.end(), kInt8) != quantized.end() ? kInt8 : quantized[0];
  const bool by_ms = a.objective == PrecisionObjective::latency;

  // Per layer: the allowed precisions by cost, each dearer one kept only if it does less damage.
  const std::vector<LayerSensitivity>& layers = r.sensitivity.layers;
  std::vector<std::vector<Candidate>> cands(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerSensitivity& l = layers[i];
    std::vector<Candidate> all;
    if (fp32_allowed) all.push_back({kFp32, by_ms ? l.fp32_ms : static_cast<double>(l.fp32_weight_bytes), 0.0});
    for (size_t k = 0; k < quantized.size(); ++k) {
      const LayerAt& at = l.at[k];
      if (!at.error.empty()) continue;  // the layer cannot take this precision
      OutputAgreement alone;
      alone.cosine_mean = at.cosine, alone.top1 = at.top1, alone.rel_l2_mean = at.rel_l2, alone.mask_iou_mean = at.mask_iou;
      all.push_back({quantized[k], by_ms ? at.ms : static_cast<double>(at.weight_bytes),
                     std::max(0.0, drop_of(alone, a.metric))});
      if (quantized[k] == r.base) r.all_base_cost += all.back().cost;
    }
    if (all.empty())
      throw Error("--precision auto: layer '" + l.node + "' can take none of the allowed precisions (" + l.at[0].error +
                  "); allow fp32");
    std::stable_sort(all.begin(), all.end(), [](const Candidate& x, const Candidate& y) {
      return x.cost != y.cost ? x.cost < y.cost : x.damage < y.damage;
    });
    // A precision is worth its cost only if no other one does less damage for about as little: a
    // measured time within 5% is a tie (two runs of one kernel differ by that much; a 4-bit layer
    // that runs the int8 kernel on its codes is no faster than int8).
    const double tie = by_ms ? 1.05 : 1.0;
    for (const Candidate& c : all) {
      bool beaten = false;
      for (const Candidate& e : all) beaten |= e.damage < c.damage && e.cost <= c.cost * tie;
      if (!beaten && (cands[i].empty() || c.damage < cands[i].back().damage)) cands[i].push_back(c);
    }
  }

  // The evaluation: the mixed model through the quantizer, run on the inputs, against fp32.
  BuildOptions bo = o;
  bo.precision = r.base;
  QuantizationStart st = start_quantization(bo);
  prepare_rounding(*st.fp32, st.quantize, /*every_layer=*/true);  // --rounding gptq: every layer may go sub-byte
  const Graph& fg = st.fp32->graph();
  const std::vector<std::vector<Tensor>> eval = evaluation_inputs(a, fg);
  std::vector<Tensor> ref;
  for (const auto& in : eval) ref.push_back(st.fp32->run(in).at(0));
  CompileOptions host = st.compile;
  host.target = host_target();
  host.allow_foreign_target = false;
  host.autotune = false;
  std::map<std::vector<DType>, std::vector<Range>> ranges_for;  // calibration depends on the widths only
  std::vector<size_t> level(layers.size(), 0);
  auto choice = [&] {
    std::map<std::string, Precision> m;
    for (size_t i = 0; i < layers.size(); ++i) m[layers[i].node] = cands[i][level[i]].p;
    return m;
  };
  auto evaluate = [&] {
    QuantizeOptions q = st.quantize;
    q.precision = r.base;
    q.keep_8bit = {false, false, {}};
    q.progress = nullptr;
    q.layer_precision = choice();
    const std::vector<DType> widths = activation_widths(fg, q);
    auto it = ranges_for.find(widths);
    if (it == ranges_for.end()) it = ranges_for.emplace(widths, calibrate_model(*st.fp32, q)).first;
    auto m = CompiledModel::compile(quantize_graph(fg, it->second, q), host);
    OutputAgreement ag;
    for (size_t i = 0; i < eval.size(); ++i)
      add_output(ag, compare_output(ref[i], m->run(eval[i]).at(0), a.mask_threshold));
    finish_agreement(ag, static_cast<int>(eval.size()));
    ++r.evaluations;
    return drop_of(ag, a.metric);
  };
  std::vector<std::string> promoted_from(layers.size());
  std::vector<size_t> last_batch;  // in the order promoted (most damage removed per cost first)
  for (;;) {
    r.drop = evaluate();
    if (r.drop <= a.max_drop) {
      r.met = true;
      break;
    }
    // Damage removed per unit of cost added by each layer's next step up.
    std::vector<std::pair<double, size_t>> steps;
    for (size_t i = 0; i < layers.size(); ++i) {
      if (level[i] + 1 >= cands[i].size()) continue;
      const Candidate &cur = cands[i][level[i]], &next = cands[i][level[i] + 1];
      steps.push_back({(cur.damage - next.damage) / std::max(next.cost - cur.cost, 1e-9), i});
    }
    if (steps.empty()) break;  // every layer at its most accurate allowed precision
    std::stable_sort(steps.begin(), steps.end(), [](auto& x, auto& y) { return x.first > y.first; });
    const size_t batch = std::max<size_t>(1, steps.size() / 8);
    last_batch.clear();
    for (size_t k = 0; k < batch; ++k) {
      const size_t i = steps[k].second;
      if (promoted_from[i].empty()) promoted_from[i] = cands[i][level[i]].p.name();
      ++level[i];
      last_batch.push_back(i);
    }
  }
  // The last batch may have overshot: step its layers back down, least useful first, while the
  // budget still holds (each tried on the whole model).
  if (r.met)
    for (auto it = last_batch.rbegin(); it != last_batch.rend() && last_batch.size() > 1; ++it) {
      --level[*it];
      const double d = evaluate();
      if (d <= a.max_drop) {
        r.drop = d;
        if (cands[*it][level[*it]].p.name() == promoted_from[*it]) promoted_from[*it].clear();
      } else {
        ++level[*it];
      }
    }
  for (size_t i = 0; i < layers.size(); ++i) {
    const Candidate& c = cands[i][level[i]];
    r.layers[layers[i].node] = c.p;
    r.cost += c.cost;
    const std::string alone = "alone it costs " + format("%.2e", c.damage) + " " + metric_name(a.metric);
    r.why[layers[i].node] =
        promoted_from[i].empty()
            ? "auto: the " + std::string(by_ms ? "fastest" : "smallest") + " allowed (" + cost_str(c.cost, a.objective) +
                  "); " + alone
            : "auto: promoted from " + promoted_from[i] + " to meet the budget (" + cost_str(c.cost, a.objective) +
                  "); " + alone;
  }
  return r;
}

BuiltModel build_auto_precision(const BuildOptions& given, const AutoPrecisionOptions& a, AutoPrecisionResult* result) {
  const BuildOptions o = with_rounding_state(given);
  AutoPrecisionResult r = choose_layer_precisions(o, a);
  if (!r.met)
    throw Error("--precision auto: no choice meets --max-drop " + format("%g", a.max_drop) + " (" +
                metric_name(a.metric) + "): with every layer at its most accurate allowed precision the drop is " +
                format("%.3g", r.drop) + "; allow fp32 or wider precisions, or raise the budget");
  BuildOptions bo = o;
  bo.precision = r.base;
  bo.quantize.keep_8bit = {false, false, {}};
  bo.quantize.layer_precision = r.layers;
  // Each layer's precision was chosen on the times its kernels measured (the guard's rules set
  // aside: a 4-bit layer whose weights dominate its traffic ran 1.9x faster than int8 in ResNet-18's
  // last stage at 64x64, where the guard's rule, measured on compute-bound layers, would run int8
  // kernels on its codes): the model is built as measured.
  bo.on_slow = SlowPolicy::allow;
  BuiltModel b = build_model(bo);
  b.layer_precision.clear();
  for (auto& [node, p] : r.layers) b.layer_precision[node] = {p.name(), r.why.at(node)};
  // The model as built (the guard may have changed a node since the search) against fp32.
  BuildOptions fo = o;
  fo.precision = kFp32;
  const BuiltModel fp = build_model(fo);
  const double searched = r.drop;
  r.drop = drop_of(compare_models(fp, b, nullptr, evaluation_inputs(a, fp.model->graph()), a.mask_threshold).vs_fp32,
                   a.metric);
  r.met = r.drop <= a.max_drop;
  log_note("--precision auto: " + std::to_string(r.layers.size()) + " layers chosen in " +
           std::to_string(r.evaluations) + " evaluation(s); the built model's " + metric_name(a.metric) + " is " +
           format("%.3g", r.drop) + " (budget " + format("%g", a.max_drop) + ")");
  if (!r.met)
    log_warning("--precision auto: the built model's " + std::string(metric_name(a.metric)) + " " +
                format("%.3g", r.drop) + " is over the budget, while the search measured " + format("%.3g", searched) +
                " (the guard changed nodes since: see its warnings)");
  if (result) *result = std::move(r);
  return b;
}

}  // namespace lowbit
