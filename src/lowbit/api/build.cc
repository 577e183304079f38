#include "lowbit/api/build.h"

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "lowbit/artifact/artifact.h"
#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/frontend/load_model.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/io/samples.h"

namespace lowbit {

namespace {

CompileOptions target_compile_options(const BuildOptions& o) {
  CompileOptions opts = o.compile;
  opts.target = o.target ? *o.target : host_target();
  opts.allow_foreign_target = o.allow_foreign_target;
  return opts;
}

Graph load_source(const BuildOptions& o) {
  return o.model_bytes.empty() ? load_model(o.model, o.input_shapes)
                               : load_model_bytes(o.model_bytes, o.input_shapes, o.model.empty() ? "<bytes>" : o.model);
}

}  // namespace

static QuantizationStart start_from_graph(const BuildOptions& o, Graph g, const CompileOptions& target_opts) {
  if (!o.precision.quantized()) throw Error("start_quantization: precision " + o.precision.name() + " is not quantized");
  // A model imported already quantized (QDQ or QOperator ONNX) carries its own integer codes:
  // calibrating it again would measure codes, not floats. It runs as imported at precision fp32.
  // (Dtypes are inferred at compile; the ops say it: lowbit's own quantized ops, which the QDQ and
  // QOperator imports produce, or QuantizeLinear kept as imported.)
  for (const Node& n : g.nodes)
    if (lowbit_quantized(n.op) || n.op == "QuantizeLinear")
      throw Error("model '" + o.model + "' is already quantized (node '" + n.name + "' is " + n.op +
                  "): it runs with its own quantization at precision fp32; quantizing it again (" + o.precision.name() +
                  ") is not supported");
  // Quantized: the fp32 model must run here to calibrate, so compile it for the host.
  CompileOptions fopts = target_opts;
  fopts.target = host_target();
  fopts.allow_foreign_target = false;
  fopts.optimize = true;
  fopts.autotune = false;
  fopts.fuse_post_ops = false;  // calibration reads each conv's output before its activation
  QuantizationStart st;
  st.compile = target_opts;
  st.fp32 = CompiledModel::compile(std::move(g), fopts);
  const CompiledModel* fp32 = st.fp32.get();
  QuantizeOptions& q = st.quantize;
  q = o.quantize;
  q.precision = o.precision;
  for (size_t i = 0; i < o.named_samples.size(); ++i) {
    std::vector<Tensor> sample;
    for (ValueId v : fp32->graph().inputs) {
      const Value& in = fp32->graph().value(v);
      auto it = o.named_samples[i].find(in.name);
      if (it == o.named_samples[i].end())
        throw Error("calibration sample " + std::to_string(i) + " has no input '" + in.name + "'");
      if (it->second.dtype() != in.dtype || it->second.shape() != in.shape)
        throw Error("calibration sample " + std::to_string(i) + ": input '" + in.name + "' must be " +
                    dtype_name(in.dtype) + " " + shape_str(in.shape) + ", got " + dtype_name(it->second.dtype()) + " " +
                    shape_str(it->second.shape()));
      sample.push_back(it->second);
    }
    q.samples.push_back(std::move(sample));
  }
  if (q.samples.empty() && !o.calibration_folder.empty())
    q.samples = load_samples(o.calibration_folder, fp32->graph(), q.synthetic_samples, o.preprocess);
  if (q.equalize) {  // the fp32 model the quantizer then starts from is the equalized one
    Graph eq = st.fp32->graph();
    st.equalized = equalize_layers(*st.fp32, calibration_samples(eq, q), q, eq);
    log_note(describe_equalization(st.equalized));
    if (std::any_of(st.equalized.begin(), st.equalized.end(), [](const EqualizedPair& p) { return p.applied(); }))
      st.fp32 = CompiledModel::compile(std::move(eq), fopts);
  }
  return st;
}

QuantizationStart start_quantization(const BuildOptions& o) {
  if (o.model_bytes.empty() && is_artifact_file(o.model))
    throw Error("'" + o.model + "' is a compiled artifact: quantizing starts from an fp32 model (.onnx or a zoo name)");
  return start_from_graph(o, load_source(o), target_compile_options(o));
}

static BuiltModel build(const BuildOptions& o);

BuiltModel build_model(const BuildOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  BuiltModel b = build(o);
  b.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return b;
}

static BuiltModel build(const BuildOptions& o) {
  CompileOptions opts = target_compile_options(o);
  BuiltModel b;
  if (o.model_bytes.empty() && is_artifact_file(o.model)) {
    if (!o.input_shapes.empty()) throw Error("input shapes cannot change a compiled artifact's shapes");
    Artifact a = load_artifact(o.model);
    nlohmann::json meta;
    try {
      meta = nlohmann::json::parse(a.metadata_json);
    } catch (const nlohmann::json::exception& e) {
      throw Error("artifact '" + o.model + "': metadata is not JSON: " + e.what());
    }
    b.precision = meta.is_object() && meta.contains("precision") && meta["precision"].is_string()
                      ? meta["precision"].get<std::string>()
                      : "fp32";
    // An artifact runs for the target it was compiled for unless a target is given, so a model
    // made for cascadelake does not quietly fall back to other kernels on a lesser CPU.
    if (!o.target && meta.is_object() && meta.contains("target_spec") && meta["target_spec"].is_string()) {
      opts.target = parse_target(meta["target_spec"].get<std::string>());
      const std::string name = meta.contains("target") && meta["target"].is_string() ? meta["target"].get<std::string>() : "?";
      opts.target.name = name + " (the artifact's target)";
    }
    if (meta.is_object() && meta.contains("layer_precision") && meta["layer_precision"].is_object())
      for (auto& [node, v] : meta["layer_precision"].items())
        if (v.is_object() && v.contains("precision") && v["precision"].is_string() && v.contains("why") && v["why"].is_string())
          b.layer_precision[node] = {v["precision"].get<std::string>(), v["why"].get<std::string>()};
    b.graph = a.graph;
    b.model = CompiledModel::compile(std::move(a.graph), opts);
    return b;
  }
  Graph g = load_source(o);
  b.precision = o.precision.name();
  if (!o.precision.quantized()) {
    b.graph = g;
    b.model = CompiledModel::compile(std::move(g), opts);
    return b;
  }
  QuantizationStart st = start_from_graph(o, std::move(g), opts);
  QuantizeOptions& q = st.quantize;
  if (o.precision.subbyte()) {
    auto kept = nodes_kept_8bit(st.fp32->graph(), q);
    std::string list;
    for (auto& [node, why] : kept) list += (list.empty() ? "" : ", ") + node + " (" + why + ")";
    log_note(b.precision + ": " + std::to_string(kept.size()) + " node(s) kept at 8 bits" + (kept.empty() ? "" : ": ") +
             list);
  }
  if (q.group_size > 0)
    // Measured (Zen 4, AVX-512 VNNI, ResNet-50 w4a4): 56 ms at group size 32 and 47 ms at 128, against
    // 26 ms with a scale per output channel; each group's int32 sums leave the tile to be scaled on
    // their own (docs/subbyte.md).
    log_note("group size " + std::to_string(q.group_size) + ": a scale per " + std::to_string(q.group_size) +
             " input channels and tap, for accuracy; each group's sums are scaled on their own, which costs speed "
             "(ResNet-50 w4a4 ran 1.8-2.2x slower than with a scale per output channel on AVX-512 VNNI), and convs "
             "whose input channels the group size does not divide run the reference kernel or fp32");
  prepare_rounding(*st.fp32, q);  // here, so that what the rounding did can be said below
  if (q.rounding_state) {  // a state shared with a precision search: only this build's layers count
    std::lock_guard<std::mutex> lock(q.rounding_state->mu);
    q.rounding_state->outcomes.clear();
  }
  QuantizedBuild qb = build_quantized(*st.fp32, opts, q, o.on_slow);
  if (q.rounding_state && !q.rounding_state->outcomes.empty()) log_note(describe_rounding(*q.rounding_state));
  if (!qb.slow.empty()) log_warning(describe_slow_nodes(qb.slow, o.on_slow, opts.target.name));
  for (const std::string& c : qb.constant_outputs) log_warning("degenerate layer " + c);
  if (!qb.subbyte_on_int8.empty()) log_note(describe_subbyte_on_int8(qb.subbyte_on_int8, o.on_slow, opts.target.name));
  for (auto& [node, why] : nodes_kept_8bit(st.fp32->graph(), q))
    if (!q.layer_precision.count(node)) b.layer_precision[node] = {"int8", why};
  for (auto& [node, p] : q.layer_precision) b.layer_precision[node] = {p.name(), "--layer-precision"};
  b.graph = std::move(qb.graph);
  b.model = std::move(qb.model);
  b.slow = std::move(qb.slow);
  return b;
}

nlohmann::json artifact_metadata(const BuiltModel& b, const std::string& source) {
  const Precision p = parse_precision(b.precision);
  nlohmann::json slow = nlohmann::json::array();
  for (const SlowNode& s : b.slow) slow.push_back({{"node", s.node}, {"reason", s.reason}});
  nlohmann::json layers = nlohmann::json::object();
  for (auto& [node, pw] : b.layer_precision) layers[node] = {{"precision", pw.first}, {"why", pw.second}};
  return {{"precision", b.precision},
          {"weight_bits", p.weight_bits()},
          {"act_bits", p.act_bits()},
          {"target", b.model->target().name},
          {"target_spec", b.model->target().spec()},
          {"source", source},
          {"kept_fp32", slow},
          {"layer_precision", layers}};
}

}  // namespace lowbit
