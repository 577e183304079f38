#include <limits>

#include "lowbit/ir/op_schema.h"
#include "lowbit/passes/graph_match.h"
#include "lowbit/passes/passes.h"

namespace lowbit {
namespace {

bool is_graph_output(const Graph& g, ValueId v) {
  for (ValueId o : g.outputs)
    if (o == v) return true;
  return false;
}

// Relu or Clip with constant bounds, as a clamp interval.
bool activation_bounds(const Graph& g, const Node& n, float& lo, float& hi) {
  lo = -std::numeric_limits<float>::infinity();
  hi = std::numeric_limits<float>::infinity();
  if (n.op == "Relu") {
    lo = 0.f;
    return true;
  }
  if (n.op != "Clip") return false;
  for (size_t k = 1; k < 3; ++k) {
    ValueId v = Graph::input_or_none(n, k);
    if (v == kNoValue) continue;
    const Tensor* t = g.constant(v);
    if (!t || t->numel() != 1 || t->dtype() != DType::f32) return false;
    (k == 1 ? lo : hi) = t->data<float>()[0];
  }
  return true;
}

// Rewires node `dst` to produce what `absorbed` produced and marks `absorbed` for removal.
void absorb(Node& dst, Node& absorbed, std::vector<char>& erase, size_t absorbed_index) {
  dst.outputs[0] = absorbed.outputs[0];
  erase[absorbed_index] = 1;
}

}  // namespace

int fuse_epilogues(Graph& g, bool post_ops) {
  int fused = 0;
  // Repeat until stable: fusing an Add makes the following Relu fusable into the same Conv.
  for (bool changed = true; changed;) {
    changed = false;
    auto producer = g.producers();
    auto consumers = g.consumers();
    std::vector<char> erase(g.nodes.size(), 0);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      Node& n = g.nodes[i];
      if (erase[i]) continue;
      if (post_ops && (n.op == "Mul" || n.op == "Add") && n.inputs.size() == 2) {
        // A scale or shift by one constant after an fp32 Conv's fused activation (PP-LCNet's
        // learnable affine after each HardSwish: 48 Mul + Add pairs in the PP-OCRv4 detector)
        // runs in the same epilogue: y = act(conv) * post_scale + post_shift. Before the
        // activation, fold_conv_affine has folded such constants into the weights.
        bool done = false;
        for (int side = 0; side < 2 && !done; ++side) {
          const ValueId x = n.inputs[static_cast<size_t>(side)];
          const std::optional<float> k = match::scalar(g, n.inputs[static_cast<size_t>(1 - side)]);
          const NodeId p = producer[static_cast<size_t>(x)];
          if (!k || p < 0 || erase[static_cast<size_t>(p)] || !match::single_use(g, consumers, x)) continue;
          Node& conv = g.nodes[static_cast<size_t>(p)];
          if (conv.op != "Conv" || g.value(x).dtype != DType::f32 || g.value(n.outputs[0]).shape != g.value(x).shape ||
              !(conv.attrs.has("post_op") || conv.attrs.has("act_min") || conv.attrs.has("act_max")))
            continue;
          const float scale = conv.attrs.get_float("post_scale", 1.0f), shift = conv.attrs.get_float("post_shift", 0.0f);
          conv.attrs.set("post_scale", n.op == "Mul" ? scale * *k : scale);
          conv.attrs.set("post_shift", n.op == "Mul" ? shift * *k : shift + *k);
          absorb(conv, n, erase, i);
          ++fused;
          changed = done = true;
        }
        if (done) continue;
      }
      if (n.op == "Add" && n.inputs.size() == 2) {
        // Fuse into the Conv that runs later, so the residual already exists when it runs.
        for (int side = 0; side < 2; ++side) {
          ValueId x = n.inputs[static_cast<size_t>(side)], r = n.inputs[static_cast<size_t>(1 - side)];
          NodeId p = producer[static_cast<size_t>(x)];
          if (p < 0 || erase[static_cast<size_t>(p)]) continue;
          Node& conv = g.nodes[static_cast<size_t>(p)];
          if ((conv.op != "Conv" && conv.op != "BinaryConv") || conv.inputs.size() > 3 || conv.attrs.has("act_min") ||
              conv.attrs.has("act_max") || conv.attrs.has("post_op"))
            continue;
          if (consumers[static_cast<size_t>(x)].size() != 1 || is_graph_output(g, x)) continue;
          const Value &xv = g.value(x), &rv = g.value(r);
          if (g.is_constant(r) || rv.shape != xv.shape || rv.dtype != xv.dtype) continue;
          NodeId rp = producer[static_cast<size_t>(r)];
          if (rp >= 0 && static_cast<size_t>(rp) > static_cast<size_t>(p)) continue;
          conv.inputs.resize(4, kNoValue);
          conv.inputs[3] = r;
          absorb(conv, n, erase, i);
          ++fused;
          changed = true;
          break;
        }
        continue;
      }
      if (post_ops && conv_post_op(n.op) && !n.inputs.empty()) {
        // SiLU, HardSwish, ... after an fp32 Conv: applied by the conv to each output tile while it
        // is in L1, instead of one more pass over the whole tensor (EfficientNet-B0: 49 SiLU).
        const ValueId x = n.inputs[0];
        const NodeId p = producer[static_cast<size_t>(x)];
        if (p < 0 || erase[static_cast<size_t>(p)]) continue;
        Node& conv = g.nodes[static_cast<size_t>(p)];
        if (conv.op != "Conv" || conv.attrs.has("post_op") || conv.attrs.has("post_scale") ||
            conv.attrs.has("post_shift") || g.value(x).dtype != DType::f32)
          continue;
        if (consumers[static_cast<size_t>(x)].size() != 1 || is_graph_output(g, x)) continue;
        conv.attrs.set("post_op", n.op);
        for (const char* a : {"alpha", "beta"})
          if (n.attrs.has(a)) conv.attrs.set(std::string("post_") + a, n.attrs.get_float(a, 0.0f));
        absorb(conv, n, erase, i);
        ++fused;
        changed = true;
        continue;
      }
      float lo, hi;
      if (n.inputs.empty() || !activation_bounds(g, n, lo, hi)) continue;
      ValueId x = n.inputs[0];
      NodeId p = producer[static_cast<size_t>(x)];
      if (p < 0 || erase[static_cast<size_t>(p)]) continue;
      Node& prod = g.nodes[static_cast<size_t>(p)];
      // An inference BatchNormalization BN folding left (DenseNet's, after a Concat) clamps in the
      // same pass too: one trip over memory instead of two (1 thread on the Xeon: BN 6.2 ms and
      // Relu 5.4 ms of DenseNet-121's 121 ms).
      const bool bn = prod.op == "BatchNormalization" && prod.attrs.get_int("training_mode", 0) == 0 &&
                      g.value(x).dtype == DType::f32;
      if ((prod.op != "Conv" && prod.op != "BinaryConv" && prod.op != "Gemm" && !bn) || prod.attrs.has("act_min") ||
          prod.attrs.has("act_max") || prod.attrs.has("post_op"))
        continue;
      if (consumers[static_cast<size_t>(x)].size() != 1 || is_graph_output(g, x)) continue;
      if (lo != -std::numeric_limits<float>::infinity()) prod.attrs.set("act_min", lo);
      if (hi != std::numeric_limits<float>::infinity()) prod.attrs.set("act_max", hi);
      if (!prod.attrs.has("act_min") && !prod.attrs.has("act_max")) prod.attrs.set("act_min", lo);
      absorb(prod, n, erase, i);
      ++fused;
      changed = true;
    }
    if (changed) g.erase_nodes(erase);
  }
  if (fused) g.remove_dead();
  return fused;
}

int remove_identities(Graph& g) {
  int removed = 0;
  std::vector<ValueId> replace(g.values.size());
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = static_cast<ValueId>(v);
  std::vector<Node> kept;
  // A Pad whose pads (constant input, or the attribute before opset 11) are all 0: a copy. In
  // DenseNet-121 int8 its three ran on the reference kernel in fp32 (0.36 of 11.7 ms, Zen 5, 1 thread)
  // and kept the AveragePool after it, and the 52 Concat inputs it feeds, in fp32.
  const auto zero_pad = [&](const Node& n) {
    if (n.op != "Pad" || n.inputs.empty()) return false;
    if (n.inputs.size() > 1 && n.inputs[1] != kNoValue) {
      const Tensor* pads = g.constant(n.inputs[1]);
      if (!pads || pads->dtype() != DType::i64) return false;
      for (int64_t i = 0; i < pads->numel(); ++i)
        if (pads->data<int64_t>()[i] != 0) return false;
      return true;
    }
    for (int64_t p : n.attrs.get_ints("pads", {1}))
      if (p != 0) return false;
    return true;
  };
  for (auto& n : g.nodes) {
    bool passthrough = (n.op == "Identity" || n.op == "Dropout" || zero_pad(n)) && !n.inputs.empty() &&
                       !is_graph_output(g, n.outputs[0]) &&
                       (n.outputs.size() < 2 || n.outputs[1] == kNoValue);
    if (passthrough) {
      replace[static_cast<size_t>(n.outputs[0])] = replace[static_cast<size_t>(n.inputs[0])];
      ++removed;
      continue;
    }
    for (auto& v : n.inputs)
      if (v != kNoValue) v = replace[static_cast<size_t>(v)];
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  if (removed) g.remove_dead();
  return removed;
}

}  // namespace lowbit
