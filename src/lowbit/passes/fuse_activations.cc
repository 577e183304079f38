// x * Sigmoid(x) (SiLU / Swish, as PyTorch exports nn.SiLU: a Sigmoid and a Mul reading the same
// x) becomes one SiLU node: one pass over memory instead of three (EfficientNet-B0 has 49).
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

}  // namespace lowbit
