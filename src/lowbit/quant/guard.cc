#include "lowbit/quant/guard.h"

#include <algorithm>
#include <cstdint>

#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/ir/op_schema.h"

namespace lowbit {
namespace {

// Ops with no SIMD kernel for any dtype (Flatten, Reshape...) move bytes at the same speed in
// int8 as in fp32: the guard has nothing to compare them with.
bool has_simd_candidates(const std::string& op) {
  for (const KernelCandidate* c : candidates_for(op))
    if (!c->features.empty()) return true;
  return false;
}

bool is_quantized_node(const Graph& g, const Node& n) {
  if (n.op == "QuantizeLinear" || n.op == "DequantizeLinear") return false;  // domain boundaries
  if (!has_simd_candidates(n.op)) return false;
  for (ValueId v : n.inputs)
    if (v != kNoValue && !g.is_constant(v) && g.value(v).dtype == DType::u8) return true;
  return false;
}

}  // namespace

// "\n  3 x OP<verb>KERNEL because REASON\n    nodes: a, b, c" per distinct reason, in first-seen
// order, so that a whole-model report stays readable; at most `max_names` names a group.
static std::string grouped_by_reason(const std::vector<SlowNode>& nodes, const char* verb, size_t max_names) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const SlowNode& n : nodes) {
    std::string key = n.op + verb + n.kernel + " because " + n.reason;
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == key; });
    if (it == groups.end()) groups.push_back({key, {n.node}});
    else it->second.push_back(n.node);
  }
  std::string s;
  for (auto& [why, names] : groups) {
    s += "\n  " + std::to_string(names.size()) + " x " + why + "\n    nodes:";
    for (size_t i = 0; i < names.size(); ++i) {
      if (i == max_names) {
        s += " ... and " + std::to_string(names.size() - max_names) + " more";
        break;
      }
      s += (i ? ", " : " ") + names[i];
    }
  }
  return s;
}

SlowPolicy parse_slow_policy(const std::string& s) {
  if (s == "fp32") return SlowPolicy::fp32;
  if (s == "error") return SlowPolicy::error;
  if (s == "allow") return SlowPolicy::allow;
  throw Error("--on-slow must be fp32, error or allow (got '" + s + "')");
}

std::vector<SlowNode> find_slow_quantized_nodes(const CompiledModel& q) {
  std::vector<SlowNode> slow;
  const Graph& g = q.graph();
  for (const Step& s : q.steps()) {
    const Node& n = g.nodes[static_cast<size_t>(s.node)];
    if (!is_quantized_node(g, n)) continue;
    const KernelCandidate& k = *s.choice.chosen;
    // The portable binary rows are real kernels (XOR-popcount in portable C++; they beat the
    // reference everywhere and fp32 on targets without SIMD fp32 kernels), not a fallback.
    if (k.features.empty() && !k.subbyte()) {
      std::string why;
      for (const Rejection& r : s.choice.rejected) why += (why.empty() ? "" : "; ") + r.candidate->name + ": " + r.reason;
      slow.push_back({n.name, n.op, k.name, why.empty() ? "no SIMD int8 kernel exists for " + n.op : why});
      continue;
    }
    // A SIMD kernel can still lose to fp32 on some shapes: the table says where it was measured to.
    if (k.slower_than_fp32) {
      NodeContext ctx{g, n, q.target(), q.threads()};
      std::string why = k.slower_than_fp32(ctx);
      if (!why.empty()) slow.push_back({n.name, n.op, k.name, why});
    }
  }
  return slow;
}

std::string node_precision(const Graph& g, const Node& n) {
  if ((n.op != "QConv" && n.op != "QGemm") || n.inputs.size() < 2) return "";
  const int wb = bit_width(code_dtype(g.value(n.inputs[1]))), ab = bit_width(code_dtype(g.value(n.inputs[0])));
  if (wb == 8 && ab == 8) return "int8";
  return "w" + std::to_string(wb) + "a" + std::to_string(ab);
}

std::vector<SlowNode> find_subbyte_on_int8(const CompiledModel& q) {
  std::vector<SlowNode> r;
  const Graph& g = q.graph();
  for (const Step& s : q.steps()) {
    const Node& n = g.nodes[static_cast<size_t>(s.node)];
    const std::string prec = node_precision(g, n);
    if (prec.empty() || prec == "int8") continue;
    const KernelCandidate& k = *s.choice.chosen;
    if (k.subbyte() || k.features.empty()) continue;  // a sub-byte kernel, or the guard's fp32 report covers it
    // Why no sub-byte row took it: the sub-byte rows that read this node's codes and were rejected
    // say why; the last such one before the chosen row is the nearest alternative (the same tile,
    // where the table has one per tile), and a row this target could run beats one it cannot.
    const std::optional<DType> x = code_dtype(g.value(n.inputs[0]));
    const std::optional<DType> w = n.inputs.size() > 1 && n.inputs[1] != kNoValue
                                       ? std::optional<DType>(code_dtype(g.value(n.inputs[1])))
                                       : std::nullopt;
    const std::vector<const KernelCandidate*> rows_of_op = candidates_for(n.op);
    const auto rank = [&](const KernelCandidate* c) {
      return std::find(rows_of_op.begin(), rows_of_op.end(), c) - rows_of_op.begin();
    };
    std::string why;
    for (int pass = 0; pass < 2 && why.empty(); ++pass)
      for (const Rejection& rej : s.choice.rejected) {
        const KernelCandidate& c = *rej.candidate;
        if (rank(&c) > rank(&k)) continue;  // ranked below the chosen row: not why it lost
        bool runs = c.features.empty() || c.arch == q.target().arch;
        for (Feature f : c.features) runs &= q.target().has(f);
        if (c.reads_codes(x, w) && (pass == 1 || runs)) why = c.name + ": " + rej.reason;
      }
    if (why.empty()) {
      // None ranked above the chosen row: say which rows of this op read these codes at all.
      std::string rows;
      for (const KernelCandidate* c : rows_of_op)
        if (c->reads_codes(x, w) && !c->features.empty() && c->arch == q.target().arch)
          rows += (rows.empty() ? "" : ", ") + c->name;
      why = rows.empty() ? "no sub-byte " + n.op + " kernel for these codes on this ISA"
                         : "the int8 row ranks above the sub-byte rows for these codes (" + rows + ") on this target";
    }
    r.push_back({n.name, n.op + " " + prec, k.name, why});
  }
  return r;
}

bool pin_stepped_aside_subbyte_rows(const CompiledModel& q, Graph& g) {
  bool pinned = false;
  for (const Step& s : q.steps()) {
    const Node& n = q.graph().nodes[static_cast<size_t>(s.node)];
    const std::string prec = node_precision(q.graph(), n);
    if (prec.empty() || prec == "int8" || s.choice.chosen->subbyte()) continue;
    const std::optional<DType> x = code_dtype(q.graph().value(n.inputs[0]));
    const std::optional<DType> w = std::optional<DType>(code_dtype(q.graph().value(n.inputs[1])));
    for (const Rejection& rej : s.choice.rejected)
      if (rej.candidate->reads_codes(x, w) && rej.reason.rfind("applies, but steps aside", 0) == 0) {
        for (Node& gn : g.nodes)  // by name: q's graph went through the passes again
          if (gn.name == n.name && gn.op == n.op) {
            gn.attrs.set(kPinnedKernelAttr, rej.candidate->name);
            pinned = true;
          }
        break;
      }
  }
  return pinned;
}

std::string describe_subbyte_on_int8(const std::vector<SlowNode>& nodes, SlowPolicy policy, const std::string& target) {
  std::string s = std::to_string(nodes.size()) + " sub-byte node(s) run int8 kernels on their codes on target " + target +
                  " (exact: the outputs are bit-identical, the speed is int8's)" +
                  (policy == SlowPolicy::error   ? "; refusing to compile (--on-slow=error):"
                   : policy == SlowPolicy::allow ? " (--on-slow=allow kept every sub-byte kernel that can run them; none can here):"
                                                 : " (--on-slow=error refuses):");
  return s + grouped_by_reason(nodes, " runs ", 12);
}

std::vector<std::string> find_constant_outputs(CompiledModel& q, const std::vector<std::vector<Tensor>>& inputs) {
  const Graph& g = q.graph();
  std::vector<NodeId> producer = g.producers();
  std::vector<int> lo(g.values.size(), 256), hi(g.values.size(), -1);
  for (const auto& in : inputs)
    q.run_observed(in, [&](ValueId v, const TensorView& t) {
      if (t.dtype != DType::u8 || !g.value(v).quant || producer[static_cast<size_t>(v)] < 0) return;
      const std::string& op = g.nodes[static_cast<size_t>(producer[static_cast<size_t>(v)])].op;
      if (!lowbit_quantized(op)) return;
      int& l = lo[static_cast<size_t>(v)];
      int& h = hi[static_cast<size_t>(v)];
      for (int64_t i = 0; i < t.numel(); ++i) {
        const int c = t.as<uint8_t>()[i];
        l = std::min(l, c);
        h = std::max(h, c);
      }
    });
  std::vector<std::string> r;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (hi[v] >= 0 && lo[v] == hi[v]) {
      const Node& n = g.nodes[static_cast<size_t>(producer[v])];
      r.push_back(n.label() + ": every output is code " + std::to_string(lo[v]) + " (" +
                  dtype_name(code_dtype(g.value(static_cast<ValueId>(v)))) + ") on all " +
                  std::to_string(inputs.size()) + " calibration input(s): the layer carries no information");
    }
  return r;
}

QuantizedBuild build_quantized(CompiledModel& fp32, const CompileOptions& opts, QuantizeOptions qopts,
                               SlowPolicy policy) {
  // Calibrate once; the guard only changes which nodes are rewritten. The ranges first, in their
  // own statement: as two arguments of one call, std::move(qopts) could (and with GCC did) empty
  // the samples and the progress callback before calibrate_model read them, so calibration ran
  // on synthetic inputs whatever the caller gave.
  const std::vector<Range> ranges = calibrate_model(fp32, qopts);
  if (const std::string s = describe_calibration(ranges); !s.empty()) log_note(s);
  return build_quantized(fp32, ranges, opts, std::move(qopts), policy);
}

QuantizedBuild build_quantized(CompiledModel& fp32, const std::vector<Range>& ranges, const CompileOptions& opts,
                               QuantizeOptions qopts, SlowPolicy policy) {
  QuantizedBuild b;
  b.policy = policy;
  prepare_rounding(fp32, qopts);  // once too: the guard's rounds re-round the same weights
  CompileOptions copts = opts;
  copts.allow_foreign_target = true;  // the guard inspects dispatch; running is checked below
  copts.autotune = false;             // tune once, on the final graph
  for (int round = 0; round < 4; ++round) {
    b.graph = quantize_graph(fp32.graph(), ranges, qopts);
    b.model = CompiledModel::compile(b.graph, copts);
    std::vector<SlowNode> slow = find_slow_quantized_nodes(*b.model);
    if (round == 0) b.slow = slow;
    if (slow.empty() || policy == SlowPolicy::allow) break;
    if (policy == SlowPolicy::error) throw Error(describe_slow_nodes(slow, policy, opts.target.name));
    size_t before = qopts.keep_fp32.size();
    for (auto& s : slow) qopts.keep_fp32.insert(s.node);
    if (round > 0)
      for (auto& s : slow) b.slow.push_back(s);  // nodes that became slow once a neighbour stayed fp32
    if (qopts.keep_fp32.size() == before) break;
  }
  // --on-slow=allow keeps the sub-byte rows that step aside for an int8 row (measured slower, or no
  // faster, but with the weights packed in memory): pinned like autotuning's choices, so that
  // artifacts keep them.
  if (policy == SlowPolicy::allow && pin_stepped_aside_subbyte_rows(*b.model, b.graph))
    b.model = CompiledModel::compile(b.graph, copts);
  if (opts.autotune) b.model = CompiledModel::compile(b.graph, opts);
  b.subbyte_on_int8 = find_subbyte_on_int8(*b.model);
  // The degenerate-graph detector, below 8 bits, on up to 4 of the calibration inputs.
  if (qopts.precision.subbyte() && host_target().missing(opts.target).empty()) {
    std::vector<std::vector<Tensor>> inputs(qopts.samples.begin(),
                                            qopts.samples.begin() + std::min<ptrdiff_t>(4, qopts.samples.size()));
    if (inputs.empty())
      for (int i = 0; i < std::min(4, qopts.synthetic_samples); ++i)
        inputs.push_back(synthetic_inputs(fp32.graph(), qopts.seed + static_cast<uint64_t>(i)));
    b.constant_outputs = find_constant_outputs(*b.model, inputs);
  }
  if (!b.subbyte_on_int8.empty() && policy == SlowPolicy::error)
    throw Error(describe_subbyte_on_int8(b.subbyte_on_int8, policy, opts.target.name));
  if (!opts.allow_foreign_target) {
    std::string lacking = host_target().missing(opts.target);
    if (!lacking.empty())
      throw Error("target '" + opts.target.name + "' needs " + lacking +
                  ", which this CPU lacks: it can be explained, inspected or saved here, not run");
  }
  return b;
}

std::string describe_slow_nodes(const std::vector<SlowNode>& slow, SlowPolicy policy, const std::string& target) {
  std::string s = std::to_string(slow.size()) + " quantized node(s) have no kernel expected to beat fp32 on target " +
                  target + (policy == SlowPolicy::fp32    ? "; kept in fp32 (--on-slow=error refuses, --on-slow=allow keeps them slow):"
                            : policy == SlowPolicy::error ? "; refusing to compile (--on-slow=error):"
                                                          : "; kept quantized on slow kernels (--on-slow=allow):");
  s += grouped_by_reason(slow, " would run ", SIZE_MAX);
  return s;
}

}  // namespace lowbit
