// x * Sigmoid(x) (SiLU / Swish, as PyTorch exports nn.SiLU: a Sigmoid and a Mul reading the same
// x) becomes one SiLU node: one pass over memory instead of three (EfficientNet-B0 has 49).
#include <cmath>

#include "lowbit/passes/graph_match.h"
#include "lowbit/passes/passes.h"

namespace lowbit {

int fuse_silu(Graph& g) {
  int fused = 0;
  auto producer = g.producers();
  auto consumers = g.consumers();
  std::vector<char> erase(g.nodes.size(), 0);
  const auto is_output = [&](ValueId v) {
    for (ValueId o : g.outputs)
      if (o == v) return true;
    return false;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& mul = g.nodes[i];
    if (mul.op != "Mul" || mul.inputs.size() != 2 || erase[i]) continue;
    for (int side = 0; side < 2; ++side) {
      const ValueId s = mul.inputs[static_cast<size_t>(side)], x = mul.inputs[static_cast<size_t>(1 - side)];
      const NodeId p = producer[static_cast<size_t>(s)];
      if (p < 0 || erase[static_cast<size_t>(p)]) continue;
      const Node& sig = g.nodes[static_cast<size_t>(p)];
      // The Sigmoid's output must feed this Mul only (else it is still needed).
      if (sig.op != "Sigmoid" || sig.inputs.empty() || sig.inputs[0] != x || is_output(s) ||
          consumers[static_cast<size_t>(s)].size() != 1)
        continue;
      if (g.value(x).dtype != DType::f32) continue;
      erase[static_cast<size_t>(p)] = 1;
      mul.op = "SiLU";
      mul.inputs = {x};
      mul.attrs = {};
      ++fused;
      break;
    }
  }
  if (fused) {
    g.erase_nodes(erase);
    g.remove_dead();
  }
  return fused;
}

// HardSwish written out in elementwise ops, as Paddle2ONNX and older exporters write it:
//   x * Clip(x + 3, 0, 6) / 6   (Add, Clip, Mul, then Div by 6 or Mul by 1/6)
//   x * HardSigmoid(x) with alpha 1/6, beta 0.5
// becomes one HardSwish node, which a Conv before it then applies in its epilogue
// (fuse_epilogues). The PP-OCRv4 detector has 24 of the first form: 96 full-tensor passes, about
// a fifth of its fp32 time on the Xeon. The results differ from the spelled-out form by float
// rounding only (x / 6 + 0.5 clamped to [0, 1] against (x + 3) clamped to [0, 6], then / 6).
int fuse_hardswish(Graph& g) {
  int fused = 0;
  auto producer = g.producers();
  auto consumers = g.consumers();
  std::vector<char> erase(g.nodes.size(), 0);
  // The node writing v when it is `op`, not yet folded away, and v has no other reader.
  const auto made_by = [&](ValueId v, const char* op) -> Node* {
    if (v == kNoValue || !match::single_use(g, consumers, v)) return nullptr;
    const NodeId p = producer[static_cast<size_t>(v)];
    if (p < 0 || erase[static_cast<size_t>(p)]) return nullptr;
    Node& n = g.nodes[static_cast<size_t>(p)];
    return n.op == op ? &n : nullptr;
  };
  const auto near = [](std::optional<float> v, float want) { return v && std::fabs(*v - want) <= 1e-6f * want; };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& last = g.nodes[i];
    if (erase[i] || last.inputs.size() != 2 || last.outputs.empty()) continue;
    ValueId x = kNoValue;
    std::vector<NodeId> gone;
    // Form 1: the product x * Clip(x + 3, 0, 6), then / 6.
    ValueId prod = kNoValue;
    if (last.op == "Div" && match::scalar(g, last.inputs[1]) == 6.0f) prod = last.inputs[0];
    if (last.op == "Mul")
      for (int side = 0; side < 2; ++side)
        if (near(match::scalar(g, last.inputs[static_cast<size_t>(side)]), 1.0f / 6.0f))
          prod = last.inputs[static_cast<size_t>(1 - side)];
    if (Node* mul = made_by(prod, "Mul"); mul && mul->inputs.size() == 2) {
      for (int side = 0; side < 2 && x == kNoValue; ++side) {
        const ValueId c = mul->inputs[static_cast<size_t>(side)], y = mul->inputs[static_cast<size_t>(1 - side)];
        Node* clip = made_by(c, "Clip");
        if (!clip || clip->inputs.size() != 3 || match::scalar(g, clip->inputs[1]) != 0.0f ||
            match::scalar(g, clip->inputs[2]) != 6.0f)
          continue;
        Node* add = made_by(clip->inputs[0], "Add");
        if (!add || add->inputs.size() != 2) continue;
        for (int a = 0; a < 2; ++a)
          if (add->inputs[static_cast<size_t>(a)] == y && match::scalar(g, add->inputs[static_cast<size_t>(1 - a)]) == 3.0f) {
            x = y;
            gone = {producer[static_cast<size_t>(prod)], producer[static_cast<size_t>(c)],
                    producer[static_cast<size_t>(clip->inputs[0])]};
          }
      }
    }
    // Form 2: x * HardSigmoid(x; 1/6, 0.5).
    if (x == kNoValue && last.op == "Mul") {
      for (int side = 0; side < 2 && x == kNoValue; ++side) {
        const ValueId h = last.inputs[static_cast<size_t>(side)], y = last.inputs[static_cast<size_t>(1 - side)];
        Node* hs = made_by(h, "HardSigmoid");
        if (hs && hs->inputs.size() == 1 && hs->inputs[0] == y && near(hs->attrs.get_float("alpha", 0.2f), 1.0f / 6.0f) &&
            hs->attrs.get_float("beta", 0.5f) == 0.5f) {
          x = y;
          gone = {producer[static_cast<size_t>(h)]};
        }
      }
    }
    if (x == kNoValue || g.value(x).dtype != DType::f32) continue;
    for (NodeId p : gone) erase[static_cast<size_t>(p)] = 1;
    last.op = "HardSwish";
    last.inputs = {x};
    last.attrs = {};
    ++fused;
  }
  if (fused) {
    g.erase_nodes(erase);
    g.remove_dead();
  }
  return fused;
}

}  // namespace lowbit
