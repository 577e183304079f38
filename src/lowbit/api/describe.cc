#include "lowbit/api/describe.h"

#include <cstdio>
#include <map>

#include "lowbit/api/bench.h"
#include "lowbit/passes/qdq.h"
#include "lowbit/quant/guard.h"

namespace lowbit {

std::string node_signature(const Graph& g, const Node& n) {
  auto one = [&](ValueId v) -> std::string {
    if (v == kNoValue) return "-";
    const Value& val = g.value(v);
    std::string t = dtype_name(val.dtype);
    if (code_dtype(val) != val.dtype) t += std::string("(") + dtype_name(code_dtype(val)) + ")";
    return t;
  };
  std::string s;
  for (size_t i = 0; i < n.inputs.size(); ++i) s += (i ? "," : "") + one(n.inputs[i]);
  s += "->";
  for (size_t i = 0; i < n.outputs.size(); ++i) s += (i ? "," : "") + one(n.outputs[i]);
  const std::string prec = node_precision(g, n);
  if (!prec.empty()) s += "  " + prec;
  return s;
}

std::string value_shapes(const Graph& g, const std::vector<ValueId>& ids, bool skip_constants) {
  std::string s;
  for (ValueId v : ids) {
    if (v == kNoValue || (skip_constants && g.is_constant(v))) continue;
    s += (s.empty() ? "" : " ") + shape_str(g.value(v).shape);
  }
  return s;
}

nlohmann::json explain_json(const BuiltModel& b, const std::string& model_name) {
  const CompiledModel& m = *b.model;
  const Graph& g = m.graph();
  nlohmann::json nodes = nlohmann::json::array();
  for (const Step& s : m.steps()) {
    const Node& n = g.nodes[static_cast<size_t>(s.node)];
    nlohmann::json rej = nlohmann::json::array();
    for (const auto& r : s.choice.rejected) rej.push_back({{"kernel", r.candidate->name}, {"reason", r.reason}});
    nlohmann::json row = {{"node", n.name},
                          {"label", n.label()},
                          {"op", n.op},
                          {"inputs", value_shapes(g, n.inputs, true)},
                          {"outputs", value_shapes(g, n.outputs, false)},
                          {"signature", node_signature(g, n)},
                          {"macs", s.macs},
                          {"kernel", s.choice.chosen->name},
                          {"rejected", rej}};
    const std::string unfused = n.attrs.get_string(kQdqUnfusedAttr, "");
    if (!unfused.empty()) row["note"] = "kept as imported, not fused into lowbit's int8 form: " + unfused;
    if (auto lp = b.layer_precision.find(n.name); lp != b.layer_precision.end())
      row["precision"] = {{"precision", lp->second.first}, {"why", lp->second.second}};
    nodes.push_back(std::move(row));
  }
  return {{"model", model_name},
          {"target", m.target().name},
          {"features", m.target().feature_string()},
          {"caches", m.target().caches.to_string()},
          {"precision", b.precision},
          {"nodes", nodes}};
}

nlohmann::json inspect_json(const BuiltModel& b, const std::string& model_name) {
  const CompiledModel& m = *b.model;
  const Graph& g = m.graph();
  nlohmann::json nodes = nlohmann::json::array();
  std::map<std::string, int64_t> by_dtype;
  int domain_changes = 0;
  for (const Step& s : m.steps()) {
    const Node& n = g.nodes[static_cast<size_t>(s.node)];
    int64_t wbytes = 0;
    for (ValueId v : n.inputs)
      if (v != kNoValue && g.is_constant(v)) {
        wbytes += g.constant(v)->nbytes();
        by_dtype[dtype_name(g.value(v).dtype)] += g.constant(v)->nbytes();
      }
    std::string label = n.op;
    if (n.attrs.has("act_min") || n.attrs.has("act_max")) label += "+clamp";
    if (n.op == "Conv" && n.inputs.size() > 3 && n.inputs[3] != kNoValue) label += "+add";
    // Domain changes are where a quantized graph pays for fp32 <-> integer conversions.
    const bool boundary = n.op == "QuantizeLinear" || n.op == "DequantizeLinear";
    domain_changes += boundary;
    if (boundary) label = n.op == "QuantizeLinear" ? ">> f32->u8" : "<< u8->f32";
    std::string quant = "-";
    const Value& out = g.value(n.outputs[0]);
    if (out.quant && !out.quant->scale.empty()) {
      char buf[80];
      std::snprintf(buf, sizeof buf, "%s s=%.4g z=%d", dtype_name(out.dtype), out.quant->scale[0],
                    out.quant->zero_point.empty() ? 0 : out.quant->zero_point[0]);
      quant = buf;
    }
    nodes.push_back({{"node", n.name},
                     {"op", n.op},
                     {"op_label", label},
                     {"inputs", value_shapes(g, n.inputs, true)},
                     {"outputs", value_shapes(g, n.outputs, false)},
                     {"signature", node_signature(g, n)},
                     {"quant", quant},
                     {"macs", s.macs},
                     {"weight_bytes", wbytes}});
  }
  nlohmann::json slow = nlohmann::json::array();
  for (const SlowNode& s : b.slow)
    slow.push_back({{"node", s.node}, {"op", s.op}, {"kernel", s.kernel}, {"reason", s.reason}});
  return {{"model", model_name},
          {"precision", b.precision},
          {"target", m.target().name},
          {"features", m.target().feature_string()},
          {"threads", m.threads()},
          {"steps", m.steps().size()},
          {"macs", model_macs(m)},
          {"weight_bytes", m.weight_bytes()},
          {"weight_bytes_by_dtype", by_dtype},
          // null for a foreign target: its kernels, and their layouts, are made where it runs
          {"kernel_weight_bytes", m.unrunnable_reason().empty() ? nlohmann::json(m.kernel_weight_bytes()) : nlohmann::json()},
          {"peak_activation_bytes", m.peak_activation_bytes()},
          {"domain_changes", domain_changes},
          {"compile_ms", m.compile_ms()},
          {"slow_nodes", slow},
          {"nodes", nodes}};
}

}  // namespace lowbit
