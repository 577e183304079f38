#pragma once
// What a kernel sees of its node when it is checked and created: the graph (values, constants,
// quantization schemes), the node, the target and the thread count. A leaf header: operators and
// the dispatch table include it, and neither includes the other.
#include "lowbit/ir/graph.h"
#include "lowbit/target/target.h"

namespace lowbit {

struct NodeContext {
  const Graph& graph;
  const Node& node;
  const Target& target;
  int threads = 1;

  const Value& in(size_t i) const { return graph.value(node.inputs.at(i)); }
  const Value& out(size_t i) const { return graph.value(node.outputs.at(i)); }
  bool has_input(size_t i) const { return i < node.inputs.size() && node.inputs[i] != kNoValue; }
  const Tensor* constant(size_t i) const { return has_input(i) ? graph.constant(node.inputs[i]) : nullptr; }
};

}  // namespace lowbit
