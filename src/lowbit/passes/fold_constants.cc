#include "lowbit/ir/op_schema.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/passes/passes.h"

namespace lowbit {

int validate_and_fold_constants(Graph& g) {
  g.topo_sort();
  validate_graph_inputs(g);
  int folded = 0;
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  Graph& cg = g;
  for (size_t i = 0; i < cg.nodes.size(); ++i) {
    Node& n = cg.nodes[i];
    validate_node(cg, n);
    bool all_const = !n.inputs.empty() || n.op == "Constant";
    for (ValueId v : n.inputs)
      if (v != kNoValue && !cg.is_constant(v)) all_const = false;
    // Outputs that the graph exposes stay computed so that a model's outputs are always produced.
    bool is_output = false;
    for (ValueId o : n.outputs)
      for (ValueId go : cg.outputs)
        if (o == go) is_output = true;
    if (all_const && !is_output && find_reference(n.op)) {
      std::vector<const Tensor*> in;
      for (ValueId v : n.inputs) in.push_back(v == kNoValue ? nullptr : cg.constant(v));
      std::vector<Tensor> out = evaluate_reference(cg, n, in);
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (n.outputs[k] != kNoValue) cg.value(n.outputs[k]).constant = std::move(out[k]);
      ++folded;
      continue;
    }
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  return folded;
}

}  // namespace lowbit
