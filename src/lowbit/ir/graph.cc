#include "lowbit/ir/graph.h"

#include <unordered_set>

#include "lowbit/common/error.h"

namespace lowbit {

ValueId Graph::add_value(std::string vname, DType dtype, Shape shape, bool shape_known) {
  Value v;
  v.name = std::move(vname);
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.shape_known = shape_known;
  values.push_back(std::move(v));
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Graph::add_constant(std::string vname, Tensor t) {
  ValueId id = add_value(std::move(vname), t.dtype(), t.shape(), true);
  values.back().constant = std::move(t);
  return id;
}

NodeId Graph::add_node(std::string op, std::string nname, std::vector<ValueId> in, std::vector<ValueId> out,
                       Attributes attrs) {
  Node n;
  n.op = std::move(op);
  n.name = std::move(nname);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attrs = std::move(attrs);
  nodes.push_back(std::move(n));
  return static_cast<NodeId>(nodes.size() - 1);
}

std::vector<NodeId> Graph::producers() const {
  std::vector<NodeId> p(values.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId o : nodes[i].outputs)
      if (o != kNoValue) p[static_cast<size_t>(o)] = static_cast<NodeId>(i);
  return p;
}

std::vector<std::vector<NodeId>> Graph::consumers() const {
  std::vector<std::vector<NodeId>> c(values.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId v : nodes[i].inputs)
      if (v != kNoValue) c[static_cast<size_t>(v)].push_back(static_cast<NodeId>(i));
  return c;
}

void Graph::topo_sort() {
  std::vector<char> ready(values.size(), 0);
  for (size_t v = 0; v < values.size(); ++v)
    if (values[v].constant) ready[v] = 1;
  for (ValueId v : inputs) ready[static_cast<size_t>(v)] = 1;
  std::vector<Node> sorted;
  std::vector<char> placed(nodes.size(), 0);
  sorted.reserve(nodes.size());
  bool progress = true;
  while (sorted.size() < nodes.size() && progress) {
    progress = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (placed[i]) continue;
      bool ok = true;
      for (ValueId v : nodes[i].inputs)
        if (v != kNoValue && !ready[static_cast<size_t>(v)]) ok = false;
      if (!ok) continue;
      // Single assignment: a value written twice, or a node writing over a constant (mapped
      // read-only from an artifact) or a graph input, would have two meanings and a kernel that
      // writes where it must not.
      for (ValueId o : nodes[i].outputs)
        if (o != kNoValue) {
          if (ready[static_cast<size_t>(o)])
            throw Error("node " + nodes[i].label() + ": output '" + values[static_cast<size_t>(o)].name +
                        "' is already defined (a constant, a graph input or another node's output)");
          ready[static_cast<size_t>(o)] = 1;
        }
      placed[i] = 1;
      sorted.push_back(std::move(nodes[i]));
      progress = true;
    }
  }
  if (sorted.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (!placed[i]) {
        for (ValueId v : nodes[i].inputs)
          if (v != kNoValue && !ready[static_cast<size_t>(v)])
            throw Error("node " + nodes[i].label() + ": input '" + values[static_cast<size_t>(v)].name +
                        "' is never produced (undefined value or cycle)");
      }
    throw Error("graph has a cycle");
  }
  nodes = std::move(sorted);
}

void Graph::erase_nodes(const std::vector<char>& erase) {
  std::vector<Node> kept;
  kept.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    if (i >= erase.size() || !erase[i]) kept.push_back(std::move(nodes[i]));
  nodes = std::move(kept);
}

void Graph::remove_dead() {
  std::vector<char> live(values.size(), 0);
  for (ValueId v : outputs) live[static_cast<size_t>(v)] = 1;
  std::vector<char> keep(nodes.size(), 0);
  for (size_t i = nodes.size(); i-- > 0;) {
    bool needed = false;
    for (ValueId o : nodes[i].outputs)
      if (o != kNoValue && live[static_cast<size_t>(o)]) needed = true;
    if (!needed) continue;
    keep[i] = 1;
    for (ValueId v : nodes[i].inputs)
      if (v != kNoValue) live[static_cast<size_t>(v)] = 1;
  }
  for (ValueId v : inputs) live[static_cast<size_t>(v)] = 1;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (keep[i])
      for (ValueId o : nodes[i].outputs)
        if (o != kNoValue) live[static_cast<size_t>(o)] = 1;

  std::vector<ValueId> remap(values.size(), kNoValue);
  std::vector<Value> nv;
  for (size_t v = 0; v < values.size(); ++v)
    if (live[v]) {
      remap[v] = static_cast<ValueId>(nv.size());
      nv.push_back(std::move(values[v]));
    }
  std::vector<Node> nn;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!keep[i]) continue;
    Node n = std::move(nodes[i]);
    for (auto& v : n.inputs) v = v == kNoValue ? kNoValue : remap[static_cast<size_t>(v)];
    for (auto& v : n.outputs) v = v == kNoValue ? kNoValue : remap[static_cast<size_t>(v)];
    nn.push_back(std::move(n));
  }
  for (auto& v : inputs) v = remap[static_cast<size_t>(v)];
  for (auto& v : outputs) v = remap[static_cast<size_t>(v)];
  values = std::move(nv);
  nodes = std::move(nn);
}

std::string Graph::unique_name(const std::string& base) {
  std::unordered_set<std::string> used;
  for (auto& v : values) used.insert(v.name);
  for (auto& n : nodes) used.insert(n.name);
  if (!used.count(base)) return base;
  for (int i = 1;; ++i) {
    std::string c = base + "_" + std::to_string(i);
    if (!used.count(c)) return c;
  }
}

}  // namespace lowbit
