// Concat without copies. With batch 1 a channel Concat's inputs are contiguous slices of its
// output, so each input's producer can write straight into its slice and the Concat has nothing
// left to do. DenseNet is the case that pays: every dense layer concatenates all the features of
// its block so far, so copying is O(L^2) in the block's length (DenseNet-121 copied 2.3 M floats
// per image, 1.4 ms of 1 thread on Zen 5); in place, layer k's features are written once, at the
// same place in every later Concat of the block, and the block is one buffer. SqueezeNet's fire
// modules and Inception blocks are one Concat each.
//
// Values that share a buffer form a group: each member at a byte offset in it. Leaves are the
// members some node writes (a Concat in place writes nothing: its output is a view of its
// inputs). Placing a Concat merges its output's group with each input's at the input's slice;
// it is refused (the Concat then copies) when an input would need two places, or two leaves
// would share bytes (a value already placed in another Concat at an incompatible place).
#include <algorithm>
#include <map>

#include "lowbit/common/error.h"
#include "lowbit/passes/passes.h"

namespace lowbit {
namespace {

int64_t value_bytes(const Value& v) { return storage_bytes(v.dtype, num_elements(v.shape)); }

class Groups {
 public:
  explicit Groups(const Graph& g) : g_(g), group_(g.values.size()), pos_(g.values.size(), 0), view_(g.values.size(), 0) {
    for (size_t v = 0; v < group_.size(); ++v) group_[v] = static_cast<int>(v);  // each value alone
    members_.resize(group_.size());
    for (size_t v = 0; v < group_.size(); ++v) members_[v] = {static_cast<ValueId>(v)};
    for (ValueId v : g.inputs) graph_input_.push_back(v);
  }

  // Places concat node n's inputs inside its output; "" when placed (and committed), else why not.
  std::string place(const Node& n, int64_t alignment) {
    const ValueId y = n.outputs[0];
    const Value& yv = g_.value(y);
    if (bit_width(yv.dtype) < 8) return std::string("packed ") + dtype_name(yv.dtype) + " codes: slices are not whole bytes";
    const int64_t rank = static_cast<int64_t>(yv.shape.size());
    int64_t axis = n.attrs.get_int("axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return "axis out of range";
    for (int64_t d = 0; d < axis; ++d)
      if (yv.shape[static_cast<size_t>(d)] != 1)
        return "dims before the axis are not all 1 (" + shape_str(yv.shape) + "): its inputs are strided in its output";
    // The merged group: member -> offset, from the output's group shifted so the output sits where
    // it is, then each input's group shifted so the input sits at its slice.
    std::map<ValueId, int64_t> merged;
    std::map<int, int64_t> shift_of;  // group -> its shift
    const auto take = [&](int grp, int64_t shift) -> bool {
      auto [it, fresh] = shift_of.emplace(grp, shift);
      if (!fresh) return it->second == shift;
      for (ValueId m : members_[static_cast<size_t>(grp)]) merged[m] = pos_[static_cast<size_t>(m)] + shift;
      return true;
    };
    take(group_[static_cast<size_t>(y)], 0);
    int64_t slice = pos_[static_cast<size_t>(y)];
    for (ValueId x : n.inputs) {
      if (x == kNoValue || g_.is_constant(x)) return "an input is a constant";
      const Value& xv = g_.value(x);
      if (std::find(graph_input_.begin(), graph_input_.end(), x) != graph_input_.end())
        return "input '" + xv.name + "' is a graph input (the caller's buffer)";
      if (xv.dtype != yv.dtype) return "input '" + xv.name + "' has another dtype";
      if ((slice - pos_[static_cast<size_t>(y)]) % alignment != 0)
        return "input '" + xv.name + "' would start at a byte offset not a multiple of " + std::to_string(alignment);
      if (!take(group_[static_cast<size_t>(x)], slice - pos_[static_cast<size_t>(x)]))
        return "input '" + xv.name + "' would need two places (it is placed in another Concat already)";
      slice += value_bytes(xv);
    }
    // Leaves (written by their producers) must not share bytes.
    std::vector<std::pair<int64_t, int64_t>> leaves;
    int64_t lowest = 0;
    for (auto [m, off] : merged) {
      lowest = std::min(lowest, off);
      if (m != y && !view_[static_cast<size_t>(m)]) leaves.push_back({off, off + value_bytes(g_.value(m))});
    }
    std::sort(leaves.begin(), leaves.end());
    for (size_t i = 1; i < leaves.size(); ++i)
      if (leaves[i].first < leaves[i - 1].second)
        return "its inputs would share bytes with values already placed in another Concat";
    // Commit: one group, offsets from 0.
    const int grp = group_[static_cast<size_t>(y)];
    std::vector<ValueId>& all = members_[static_cast<size_t>(grp)];
    all.clear();
    for (auto [m, off] : merged) {
      const int old = group_[static_cast<size_t>(m)];
      if (old != grp) members_[static_cast<size_t>(old)].clear();
      group_[static_cast<size_t>(m)] = grp;
      pos_[static_cast<size_t>(m)] = off - lowest;
      all.push_back(m);
    }
    view_[static_cast<size_t>(y)] = 1;
    return "";
  }

  BufferAliases aliases() const {
    BufferAliases a;
    a.root.resize(group_.size());
    a.offset = pos_;
    for (size_t v = 0; v < group_.size(); ++v) {
      // The group's representative: its first member (members are kept sorted by value id).
      const auto& ms = members_[static_cast<size_t>(group_[v])];
      a.root[v] = ms.empty() ? static_cast<ValueId>(v) : ms.front();
    }
    return a;
  }

 private:
  const Graph& g_;
  std::vector<int> group_;
  std::vector<int64_t> pos_;
  std::vector<char> view_;
  std::vector<std::vector<ValueId>> members_;
  std::vector<ValueId> graph_input_;
};

bool is_concat(const Node& n) { return n.op == "Concat" && n.outputs.size() == 1 && !n.inputs.empty(); }

}  // namespace

int mark_concats_in_place(Graph& g, int64_t alignment) {
  Groups groups(g);
  int placed = 0;
  for (Node& n : g.nodes) {
    if (!is_concat(n)) continue;
    n.attrs.erase(kConcatInPlaceAttr);  // decided afresh: an earlier compile's choice may not hold now
    if (groups.place(n, alignment).empty()) {
      n.attrs.set(kConcatInPlaceAttr, int64_t{1});
      ++placed;
    }
  }
  return placed;
}

bool concat_in_place(const Node& n) { return is_concat(n) && n.attrs.get_int(kConcatInPlaceAttr, 0) != 0; }

BufferAliases concat_aliases(const Graph& g, int64_t alignment) {
  Groups groups(g);
  for (const Node& n : g.nodes)
    if (concat_in_place(n)) {
      const std::string why = groups.place(n, alignment);
      if (!why.empty()) throw Error("node " + n.label() + " is marked in place, but " + why);
    }
  return groups.aliases();
}

}  // namespace lowbit
