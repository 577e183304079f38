#pragma once
// Small questions the rewriting passes ask of a graph while matching patterns.
#include <cstddef>
#include <optional>

#include "lowbit/ir/graph.h"

namespace lowbit::match {

// The value of a one-element fp32 constant (shape [], [1], [1, 1], ...), if v is one.
inline std::optional<float> scalar(const Graph& g, ValueId v) {
  if (v == kNoValue) return std::nullopt;
  const Tensor* t = g.constant(v);
  if (!t || t->dtype() != DType::f32 || t->numel() != 1) return std::nullopt;
  return t->data<float>()[0];
}

inline bool is_output(const Graph& g, ValueId v) {
  for (ValueId o : g.outputs)
    if (o == v) return true;
  return false;
}

// v is read by exactly one node and is not a graph output: a pass may fold away the node that
// writes it.
inline bool single_use(const Graph& g, const std::vector<std::vector<NodeId>>& consumers, ValueId v) {
  return consumers[static_cast<size_t>(v)].size() == 1 && !is_output(g, v);
}

}  // namespace lowbit::match
