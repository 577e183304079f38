#include <algorithm>

#include "lowbit/passes/passes.h"

namespace lowbit {

// Greedy by size: place the largest buffers first, each at the lowest offset that does not
// collide with an already placed buffer whose lifetime overlaps. Simple and close to optimal for
// CNN chains.
MemoryPlan plan_memory(const Graph& g, int64_t alignment) {
  const size_t nv = g.values.size();
  const int end = static_cast<int>(g.nodes.size());
  std::vector<int> first(nv, -1), last(nv, -1);
  for (ValueId v : g.inputs) first[static_cast<size_t>(v)] = 0, last[static_cast<size_t>(v)] = 0;
  for (int i = 0; i < end; ++i) {
    const Node& n = g.nodes[static_cast<size_t>(i)];
    for (ValueId v : n.inputs)
      if (v != kNoValue && !g.is_constant(v)) last[static_cast<size_t>(v)] = i;
    for (ValueId v : n.outputs)
      if (v != kNoValue && first[static_cast<size_t>(v)] < 0) first[static_cast<size_t>(v)] = last[static_cast<size_t>(v)] = i;
  }
  for (ValueId v : g.outputs) last[static_cast<size_t>(v)] = end;

  // A buffer per root value: the union of its members' lifetimes and extents.
  const BufferAliases alias = concat_aliases(g, alignment);
  std::vector<int64_t> extent(nv, 0);
  for (size_t v = 0; v < nv; ++v) {
    if (first[v] < 0 || g.values[v].constant) continue;
    const size_t r = static_cast<size_t>(alias.root[v]);
    const int64_t bytes = std::max<int64_t>(storage_bytes(g.values[v].dtype, num_elements(g.values[v].shape)), 1);
    extent[r] = std::max(extent[r], alias.offset[v] + bytes);
    if (r == v) continue;
    first[r] = first[r] < 0 ? first[v] : std::min(first[r], first[v]);
    last[r] = std::max(last[r], last[v]);
  }

  struct Item {
    size_t v;
    int64_t size;
  };
  std::vector<Item> items;
  for (size_t v = 0; v < nv; ++v)
    if (first[v] >= 0 && !g.values[v].constant && static_cast<size_t>(alias.root[v]) == v)
      items.push_back({v, (extent[v] + alignment - 1) / alignment * alignment});
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.size > b.size; });

  MemoryPlan plan;
  plan.offset.assign(nv, -1);
  struct Placed {
    int64_t off, size;
    int first, last;
  };
  std::vector<Placed> placed;
  for (const Item& it : items) {
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Placed& p : placed)
      if (p.first <= last[it.v] && first[it.v] <= p.last) busy.push_back({p.off, p.off + p.size});
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (auto [b, e] : busy) {
      if (off + it.size <= b) break;
      off = std::max(off, e);
    }
    plan.offset[it.v] = off;
    placed.push_back({off, it.size, first[it.v], last[it.v]});
    plan.arena_bytes = std::max(plan.arena_bytes, off + it.size);
  }
  // plan.offset holds each buffer's start at its root; members sit at their offsets in it (the
  // root too: it need not be the buffer's first bytes).
  const std::vector<int64_t> start = plan.offset;
  for (size_t v = 0; v < nv; ++v)
    if (first[v] >= 0 && !g.values[v].constant)
      plan.offset[v] = start[static_cast<size_t>(alias.root[v])] + alias.offset[v];
  return plan;
}

}  // namespace lowbit
