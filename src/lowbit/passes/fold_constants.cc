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
    // Shape and Size read only their input's (static, validated) shape, never its data.
    const bool shape_only = (n.op == "Shape" || n.op == "Size") && n.inputs.size() == 1;
    // Outputs that the graph exposes stay computed so that a model's outputs are always produced.
    bool is_output = false;
    for (ValueId o : n.outputs)
      for (ValueId go : cg.outputs)
        if (o == go) is_output = true;
    if ((all_const || shape_only) && !is_output && find_reference(n.op)) {
      std::vector<const Tensor*> in;
      Tensor shape_carrier;
      if (shape_only && !all_const) {
        const Value& x = cg.value(n.inputs[0]);
        shape_carrier = Tensor::wrap(x.dtype, x.shape, nullptr, nullptr);
        in.push_back(&shape_carrier);
      } else {
        for (ValueId v : n.inputs) in.push_back(v == kNoValue ? nullptr : cg.constant(v));
      }
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
