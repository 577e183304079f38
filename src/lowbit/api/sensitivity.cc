#include "lowbit/api/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "lowbit/api/compare.h"
#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/quant/calibration.h"
#include "lowbit/quant/guard.h"

namespace lowbit {
namespace {

// The layers the quantizer rewrites (Conv and Gemm with constant weights), each with the
// activation that follows it when that activation is its output's only reader: the quantized graph
// folds it into the layer's output codes, so measuring the layer without it would charge the layer
// for codes spent on values the activation then drops (Relu's negatives).
struct Layer {
  NodeId node;
  std::set<std::string> quantized;  // node names quantized with it
  ValueId output;                   // the layer's own output (before the activation)
};

std::vector<Layer> quantizable_layers(const Graph& g) {
  const auto consumers = g.consumers();
  std::vector<Layer> r;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if ((n.op != "Conv" && n.op != "Gemm") || !g.is_constant(Graph::input_or_none(n, 1)) || n.outputs.empty()) continue;
    Layer l{static_cast<NodeId>(i), {n.name}, n.outputs[0]};
    const auto& readers = consumers[static_cast<size_t>(l.output)];
    if (readers.size() == 1 && elementwise_map(g.nodes[static_cast<size_t>(readers[0])].op))
      l.quantized.insert(g.nodes[static_cast<size_t>(readers[0])].name);
    r.push_back(std::move(l));
  }
  return r;
}

int64_t constant_bytes(const Graph& g, const Node& n) {
  int64_t b = 0;
  for (size_t i = 1; i < n.inputs.size() && i <= 2; ++i)
    if (const Tensor* t = g.constant(n.inputs[i])) b += t->nbytes();
  return b;
}

// Per node name: the median over `runs` of the summed time of its steps, and the kernel of its
// first step.
struct NodeTimes {
  std::map<std::string, double> ms;
  std::map<std::string, std::string> kernel;
};

NodeTimes time_nodes(const CompiledModel& m, const std::vector<Tensor>& in, int runs) {
  std::map<std::string, std::vector<double>> per;
  std::vector<LayerTiming> t;
  m.run_profiled(in, t);  // warm-up: first-touch of the arena and the packed weights
  for (int r = 0; r < runs; ++r) {
    t.clear();
    m.run_profiled(in, t);
    std::map<std::string, double> sum;
    for (const LayerTiming& x : t) sum[m.graph().nodes[static_cast<size_t>(x.node)].name] += x.ms;
    for (auto& [name, ms] : sum) per[name].push_back(ms);
  }
  NodeTimes r;
  for (auto& [name, v] : per) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    r.ms[name] = v[v.size() / 2];
  }
  for (const Step& s : m.steps()) {
    const std::string& name = m.graph().nodes[static_cast<size_t>(s.node)].name;
    if (!r.kernel.count(name) && s.choice.chosen) r.kernel[name] = s.choice.chosen->name;
  }
  return r;
}

}  // namespace

Sensitivity analyze_sensitivity(const BuildOptions& o, const SensitivityOptions& s) {
  if (s.precisions.empty()) throw Error("sensitivity: no precisions to measure");
  for (const Precision& p : s.precisions)
    if (!p.quantized()) throw Error("sensitivity: " + p.name() + " is not a quantized precision");
  if (s.timing_runs < 1) throw Error("sensitivity: timing runs must be at least 1");
  BuildOptions bo = o;
  bo.precision = s.precisions[0];
  QuantizationStart st = start_quantization(bo);
  prepare_rounding(*st.fp32, st.quantize, /*every_layer=*/true);  // --rounding gptq: every layer may go sub-byte
  const Graph& fg = st.fp32->graph();
  const std::vector<Layer> layers = quantizable_layers(fg);
  if (layers.empty()) throw Error("sensitivity: model '" + o.model + "' has no Conv or Gemm with constant weights");

  Sensitivity out;
  out.model = o.model;
  out.target = st.compile.target.name;
  std::vector<std::vector<Tensor>> eval = s.eval_inputs;
  if (eval.empty()) eval = held_out_inputs(fg, s.eval_samples);
  if (eval.empty()) throw Error("sensitivity: no evaluation inputs");
  out.eval_inputs = static_cast<int>(eval.size());

  // fp32: the first output and every layer's output per input, and the layers' times on the target.
  std::set<ValueId> watched;
  for (const Layer& l : layers) watched.insert(l.output);
  std::vector<Tensor> ref_out;
  std::vector<std::map<ValueId, Tensor>> ref_layer(eval.size());
  for (size_t i = 0; i < eval.size(); ++i) {
    auto y = st.fp32->run_observed(eval[i], [&](ValueId v, const TensorView& t) {
      if (!watched.count(v) || t.dtype != DType::f32) return;
      Tensor c(t.dtype, t.shape);
      std::memcpy(c.raw(), t.data, static_cast<size_t>(t.nbytes()));
      ref_layer[i].emplace(v, std::move(c));
    });
    if (y.empty()) throw Error("sensitivity: model '" + o.model + "' has no outputs");
    ref_out.push_back(std::move(y[0]));
  }
  // Times need the target to run here (a cross-compiled target's are left at 0).
  const bool timed = host_target().missing(st.compile.target).empty();
  if (!timed) log_note("sensitivity: target " + out.target + " cannot run on this host: layer times are not measured");
  const NodeTimes fp32_times = timed ? time_nodes(*CompiledModel::compile(fg, st.compile), eval[0], s.timing_runs) : NodeTimes{};

  std::map<NodeId, int64_t> macs;
  for (const Step& step : st.fp32->steps()) macs[step.node] += step.macs;
  for (const Layer& l : layers) {
    const Node& n = fg.nodes[static_cast<size_t>(l.node)];
    LayerSensitivity ls;
    ls.node = n.name;
    ls.op = n.op;
    ls.macs = macs[l.node];
    ls.fp32_weight_bytes = constant_bytes(fg, n);
    auto it = fp32_times.ms.find(n.name);
    ls.fp32_ms = it == fp32_times.ms.end() ? 0 : it->second;
    out.layers.push_back(std::move(ls));
  }

  std::set<std::string> all_nodes;
  for (const Node& n : fg.nodes) all_nodes.insert(n.name);
  CompileOptions single = st.compile;
  single.target = host_target();
  single.allow_foreign_target = false;
  single.autotune = false;
  for (const Precision& p : s.precisions) {
    out.precisions.push_back(p.name());
    QuantizeOptions q = st.quantize;
    q.precision = p;
    q.keep_8bit = {false, false, {}};  // every layer at p, stem and classifier included
    q.keep_fp32.clear();
    q.progress = nullptr;
    const std::vector<Range> ranges = calibrate_model(*st.fp32, q);
    // The layer's time and bytes where it would run: the model quantized throughout at p.
    QuantizedBuild whole = build_quantized(*st.fp32, ranges, st.compile, q, SlowPolicy::allow);
    const NodeTimes t = timed ? time_nodes(*whole.model, eval[0], s.timing_runs) : NodeTimes{};
    std::map<std::string, const Node*> whole_nodes;
    for (const Node& n : whole.graph.nodes) whole_nodes[n.name] = &n;
    for (size_t li = 0; li < layers.size(); ++li) {
      const Layer& l = layers[li];
      LayerSensitivity& ls = out.layers[li];
      LayerAt at;
      at.precision = p.name();
      if (auto w = whole_nodes.find(ls.node); w != whole_nodes.end()) at.weight_bytes = constant_bytes(whole.graph, *w->second);
      if (auto m = t.ms.find(ls.node); m != t.ms.end()) at.ms = m->second;
      if (auto k = t.kernel.find(ls.node); k != t.kernel.end()) at.kernel = k->second;
      // The model with only this layer quantized. A layer the precision cannot take (a shape its
      // kernels refuse) is reported as such, and the other layers are still measured.
      try {
        QuantizeOptions one = q;
        one.keep_fp32 = all_nodes;
        for (const std::string& name : l.quantized) one.keep_fp32.erase(name);
        auto m = CompiledModel::compile(quantize_graph(fg, ranges, one), single);
        const std::string& out_name = fg.value(l.output).name;
        SqnrAccumulator sqnr;
        OutputAgreement agree;
        for (size_t i = 0; i < eval.size(); ++i) {
          auto ref = ref_layer[i].find(l.output);
          auto y = m->run_observed(eval[i], [&](ValueId v, const TensorView& tv) {
            const Value& val = m->graph().value(v);
            if (ref != ref_layer[i].end() && val.name == out_name) sqnr.add(ref->second, tv, val);
          });
          add_output(agree, compare_output(ref_out[i], y.at(0), s.mask_threshold));
        }
        finish_agreement(agree, static_cast<int>(eval.size()));
        at.cosine = agree.cosine_mean;
        at.rel_l2 = agree.rel_l2_mean;
        at.top1 = agree.top1;
        at.mask_iou = agree.mask_iou_mean;
        at.sqnr_db = sqnr.db();
      } catch (const Error& e) {
        at.error = e.what();
        at.cosine = 0, at.top1 = 0, at.rel_l2 = 1, at.mask_iou = 0, at.sqnr_db = 0;
      }
      ls.at.push_back(std::move(at));
    }
  }
  return out;
}

std::vector<SensitivityChoice> rank_choices(const Sensitivity& s, SensitivityRank by) {
  std::vector<SensitivityChoice> saving, other;
  for (const LayerSensitivity& l : s.layers)
    for (const LayerAt& a : l.at) {
      if (!a.error.empty()) continue;
      SensitivityChoice c{&l, &a, std::max(0.0, 1 - a.cosine), static_cast<double>(l.fp32_weight_bytes - a.weight_bytes),
                          l.fp32_ms - a.ms};
      const double saved = by == SensitivityRank::per_byte ? c.bytes_saved : c.ms_saved;
      (saved > 0 ? saving : other).push_back(c);
    }
  auto per_unit = [by](const SensitivityChoice& c) {
    return c.damage / (by == SensitivityRank::per_byte ? c.bytes_saved : c.ms_saved);
  };
  std::stable_sort(saving.begin(), saving.end(),
                   [&](const SensitivityChoice& x, const SensitivityChoice& y) { return per_unit(x) < per_unit(y); });
  std::stable_sort(other.begin(), other.end(),
                   [](const SensitivityChoice& x, const SensitivityChoice& y) { return x.damage < y.damage; });
  saving.insert(saving.end(), other.begin(), other.end());
  return saving;
}

nlohmann::json sensitivity_json(const Sensitivity& s) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerSensitivity& l : s.layers) {
    nlohmann::json at = nlohmann::json::object();
    for (const LayerAt& a : l.at)
      at[a.precision] = {{"cosine", a.cosine},   {"rel_l2", a.rel_l2},
                         {"top1_agreement", a.top1}, {"mask_iou", a.mask_iou}, {"sqnr_db", a.sqnr_db},
                         {"weight_bytes", a.weight_bytes}, {"ms", a.ms},
                         {"kernel", a.kernel}};
    for (const LayerAt& a : l.at)
      if (!a.error.empty()) at[a.precision]["error"] = a.error;
    layers.push_back({{"node", l.node},
                      {"op", l.op},
                      {"macs", l.macs},
                      {"fp32_weight_bytes", l.fp32_weight_bytes},
                      {"fp32_ms", l.fp32_ms},
                      {"at", at}});
  }
  return {{"model", s.model},     {"target", s.target},         {"eval_inputs", s.eval_inputs},
          {"precisions", s.precisions}, {"layers", layers}};
}

}  // namespace lowbit
