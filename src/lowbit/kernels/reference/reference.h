#pragma once
// Portable reference kernels, one per op, written for clarity rather than speed. They are the
// oracle every fast kernel is tested against, the fallback candidate in the dispatch table, and
// what constant folding evaluates.
#include <span>
#include <string_view>

#include "lowbit/ir/graph.h"

namespace lowbit {

// Inputs/outputs in node order (omitted optional inputs: data == nullptr). Output buffers are
// allocated by the caller with the shapes validate() inferred. `g` gives access to value shapes
// and constants (e.g. conv2d_params(g, n)).
using ReferenceFn = void (*)(const Graph& g, const Node& n, std::span<const TensorView> in,
                             std::span<const TensorView> out);

// nullptr if the op has no reference kernel.
ReferenceFn find_reference(std::string_view op);

// Evaluates node n on constant inputs (constant folding): allocates outputs with the node's
// inferred dtypes/shapes and returns them.
std::vector<Tensor> evaluate_reference(const Graph& g, const Node& n, const std::vector<const Tensor*>& inputs);

// Registration helper used by kernels/reference/*.cc.
struct ReferenceRegistrar {
  ReferenceRegistrar(std::string_view op, ReferenceFn fn);
};

}  // namespace lowbit
