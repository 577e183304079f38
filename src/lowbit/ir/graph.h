#pragma once
// The IR: a graph of typed values. Nodes are kept in topological order; values carry dtype,
// shape, an optional constant payload and optional quantization parameters.
#include <optional>
#include <string>
#include <vector>

#include "lowbit/ir/attributes.h"
#include "lowbit/ir/tensor.h"

namespace lowbit {

using ValueId = int32_t;
using NodeId = int32_t;
constexpr ValueId kNoValue = -1;

// The quantization scheme of a value: real = scale * (q - zero_point), per tensor (axis = -1, one
// entry) or per channel along axis. `code` is the integer type of the codes q, which may be
// narrower than the value's storage dtype: 4-bit activation codes live in u8 storage between
// int8 kernels (their clamp is [0, 15]), and logical-mode weights keep i4 codes in i8 storage.
// Every range (clamps, calibration levels, validation) comes from dtype_info(code). `narrow`:
// the code range drops its most negative value (int8 weights: [-127, 127]).
struct QuantParams {
  QuantParams() = default;
  QuantParams(std::vector<float> s, std::vector<int32_t> zp, int ax = -1, std::optional<DType> c = std::nullopt,
              bool nr = false)
      : scale(std::move(s)), zero_point(std::move(zp)), axis(ax), code(c), narrow(nr) {}

  std::vector<float> scale;
  std::vector<int32_t> zero_point;
  int axis = -1;
  std::optional<DType> code;  // unset: the value's storage dtype
  bool narrow = false;
  // Weights only: > 0 for group-wise (blocked) scales, a scale per block_size consecutive input
  // channels of each output channel and kernel tap, in ONNX's blocked layout along axis 1: a conv
  // weight [M, C, KH, KW] has scales [M, ceil(C / block_size), KH, KW], a Gemm weight [N, K]
  // [N, ceil(K / block_size)] (weight_group_count, weight_group_index).
  int64_t block_size = 0;
};

// Group-wise weights: blocks along axis 1 of a [M, C, KH, KW] or [N, K] weight shape.
struct WeightGroups {
  int64_t M = 0, C = 0, taps = 1, block = 0, blocks = 0;  // blocks = ceil(C / block)
  int64_t count() const { return M * blocks * taps; }
  // The scale of output channel m, input channel c, tap t (kh * KW + kw).
  int64_t index(int64_t m, int64_t c, int64_t t) const { return (m * blocks + c / block) * taps + t; }
};
inline WeightGroups weight_groups(const Shape& w, int64_t block) {
  WeightGroups g;
  g.M = w.empty() ? 0 : w[0];
  g.C = w.size() > 1 ? w[1] : 1;
  for (size_t i = 2; i < w.size(); ++i) g.taps *= w[i];
  g.block = block;
  g.blocks = block > 0 ? (g.C + block - 1) / block : 1;
  return g;
}

// [qmin, qmax] of a value's codes (narrow range applied).
struct CodeRange {
  int32_t lo, hi;
};

struct Value {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  bool shape_known = false;  // false until validate() infers it (or the frontend knows it)
  std::optional<Tensor> constant;
  std::optional<QuantParams> quant;
};

// The code dtype of a quantized value (its storage dtype when the scheme does not say).
inline DType code_dtype(const Value& v) { return v.quant && v.quant->code ? *v.quant->code : v.dtype; }
inline CodeRange code_range(const Value& v) {
  const DTypeInfo& d = dtype_info(code_dtype(v));
  const bool narrow = v.quant && v.quant->narrow && d.is_signed;
  return {static_cast<int32_t>(d.qmin + (narrow ? 1 : 0)), static_cast<int32_t>(d.qmax)};
}

struct Node {
  std::string name;
  std::string op;
  std::vector<ValueId> inputs;  // kNoValue marks an omitted optional input
  std::vector<ValueId> outputs;
  Attributes attrs;

  // "conv1 (Conv)" — how errors and reports name a node.
  std::string label() const { return "'" + name + "' (" + op + ")"; }
};

class Graph {
 public:
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<ValueId> inputs;   // runtime inputs (non-constant)
  std::vector<ValueId> outputs;
  std::string name;

  ValueId add_value(std::string name, DType dtype = DType::f32, Shape shape = {}, bool shape_known = false);
  ValueId add_constant(std::string name, Tensor t);
  NodeId add_node(std::string op, std::string name, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                  Attributes attrs = {});

  Value& value(ValueId id) { return values.at(static_cast<size_t>(id)); }
  const Value& value(ValueId id) const { return values.at(static_cast<size_t>(id)); }
  bool is_constant(ValueId id) const { return id != kNoValue && value(id).constant.has_value(); }
  const Tensor* constant(ValueId id) const { return is_constant(id) ? &*value(id).constant : nullptr; }

  // Optional input i of node n, or kNoValue.
  static ValueId input_or_none(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : kNoValue; }

  // producer[v] = node index or -1; consumers[v] = node indices (graph outputs not counted).
  std::vector<NodeId> producers() const;
  std::vector<std::vector<NodeId>> consumers() const;

  // Reorders nodes topologically; throws lowbit::Error on a cycle or an undefined input.
  void topo_sort();
  // Drops nodes whose outputs nobody needs and values nobody references, renumbering ids.
  void remove_dead();
  // Drops the nodes marked in erase (indexed like nodes; a pass's rewrites), keeping the order.
  void erase_nodes(const std::vector<char>& erase);

  std::string unique_name(const std::string& base);
};

}  // namespace lowbit
