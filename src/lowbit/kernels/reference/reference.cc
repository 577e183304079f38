#include "lowbit/kernels/reference/reference.h"

#include <map>
#include <string>

#include "lowbit/common/error.h"

namespace lowbit {
namespace {
// Function-local so that registrars in other translation units can run in any static-init order.
std::map<std::string, ReferenceFn, std::less<>>& registry() {
  static std::map<std::string, ReferenceFn, std::less<>> r;
  return r;
}
}  // namespace

ReferenceFn find_reference(std::string_view op) {
  auto& r = registry();
  auto it = r.find(op);
  return it == r.end() ? nullptr : it->second;
}

ReferenceRegistrar::ReferenceRegistrar(std::string_view op, ReferenceFn fn) { registry()[std::string(op)] = fn; }

std::vector<Tensor> evaluate_reference(const Graph& g, const Node& n, const std::vector<const Tensor*>& inputs) {
  ReferenceFn fn = find_reference(n.op);
  if (!fn) throw Error("node " + n.label() + ": no reference kernel for op " + n.op);
  if (inputs.size() > n.inputs.size())
    throw Error("node " + n.label() + ": " + std::to_string(inputs.size()) + " inputs given for " +
                std::to_string(n.inputs.size()) + " node inputs");
  // One view per node input; missing trailing entries are omitted optional inputs.
  std::vector<TensorView> in(n.inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]) in[i] = inputs[i]->view();
  std::vector<Tensor> outs;
  std::vector<TensorView> out;
  outs.reserve(n.outputs.size());
  for (ValueId id : n.outputs) {
    if (id == kNoValue) {
      outs.emplace_back();
      out.push_back(TensorView{});
      continue;
    }
    const Value& v = g.value(id);
    if (!v.shape_known) throw Error("node " + n.label() + ": output '" + v.name + "' has no inferred shape");
    outs.emplace_back(v.dtype, v.shape);
    out.push_back(outs.back().view());
  }
  fn(g, n, in, out);
  return outs;
}

}  // namespace lowbit
