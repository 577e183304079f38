#pragma once
// The one validation layer. Every op has a schema: arity, the dtype signatures it accepts and a
// shape-inference rule. validate() runs them over the whole graph before any pass; later work
// (quantized and sub-byte ops) adds schemas here, never checks elsewhere.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lowbit/ir/graph.h"

namespace lowbit {

class InferContext {
 public:
  InferContext(Graph& g, Node& n) : g_(g), n_(n) {}

  const Node& node() const { return n_; }
  const Graph& graph() const { return g_; }
  const Attributes& attrs() const { return n_.attrs; }
  size_t num_inputs() const { return n_.inputs.size(); }
  bool has_input(size_t i) const { return i < n_.inputs.size() && n_.inputs[i] != kNoValue; }
  DType dtype(size_t i) const;
  const Shape& shape(size_t i) const;
  int64_t rank(size_t i) const { return static_cast<int64_t>(shape(i).size()); }
  // The constant payload of input i, or nullptr if it is computed at run time.
  const Tensor* constant(size_t i) const;
  // Constant input i read as a list of ints; fails naming `what` if it is not constant.
  std::vector<int64_t> constant_ints(size_t i, const char* what) const;

  void set_output(size_t i, DType dtype, Shape shape);

  // Throws lowbit::Error: "node 'conv1' (Conv): <reason>".
  [[noreturn]] void fail(const std::string& reason) const;
  void require(bool cond, const std::string& reason) const {
    if (!cond) fail(reason);
  }
  // Input i must have one of the given dtypes.
  void require_dtype(size_t i, std::initializer_list<DType> allowed) const;

 private:
  Graph& g_;
  Node& n_;
};

// How an op treats the quantized codes of its input 0, if it can run on them with the input's scale
// and zero point: the one statement of it that the quantizer, the QDQ export and the QDQ fusion read.
enum class QuantPassthrough : uint8_t {
  no,        // needs real values (or requantizes: QConv, QAdd)
  moves,     // bytes move unchanged (Flatten, Reshape, Squeeze, Unsqueeze)
  selects,   // each output is one of its inputs' codes (MaxPool): order-preserving
  averages,  // each output is a rounded mean of input codes (AveragePool, GlobalAveragePool)
};

struct OpSchema {
  std::string op;
  int min_inputs = 1, max_inputs = 1;
  int min_outputs = 1, max_outputs = 1;
  std::function<void(InferContext&)> infer;  // checks dtypes/attrs/shapes and sets outputs
  QuantPassthrough quant_passthrough = QuantPassthrough::no;
  // Output element i is a function of input element i alone (its other inputs, if any, constant
  // scalars): on u8 codes the quantizer runs such an op as a 256-entry table (QLut).
  bool elementwise_map = false;
  // Output element (n, c, ...) is a function of input element (n, c, ...) and of channel c's
  // constants alone (inference BatchNormalization, with any clamp fused into it): on u8 codes the
  // quantizer runs such an op as a 256-entry table per channel (QLut with a [C, 256] table).
  bool channel_map = false;
  // One of lowbit's own quantized ops (QConv, QGemm, QAdd, QLut): reads codes and writes codes
  // with parameters of their own (a graph holding one was quantized by lowbit).
  bool lowbit_quantized = false;
  // An fp32 activation a Conv applies to its output as it stores it: fuse_epilogues moves it into
  // the Conv's attribute post_op (with post_alpha / post_beta), and every fp32 Conv kernel and the
  // reference apply it after the bias, residual and clamp.
  bool conv_post_op = false;
  // The dtype signatures the infer rule accepts, for `lowbit ops` (stated where they are not just
  // f32): "X u8 (codes u8|u4|u2), W i8|i4|i2, B f32 -> Y u8".
  const char* signatures = "";
};

// The op's QuantPassthrough (no for unknown ops).
QuantPassthrough quant_passthrough(std::string_view op);

// The op's elementwise_map / channel_map / lowbit_quantized (false for unknown ops).
bool elementwise_map(std::string_view op);
bool channel_map(std::string_view op);
bool lowbit_quantized(std::string_view op);
bool conv_post_op(std::string_view op);

// Registered schemas (ir/ops_*.cc).
const OpSchema* find_schema(std::string_view op);
std::vector<std::string> supported_ops();

// Runs every node's schema in order: infers output dtypes/shapes and throws lowbit::Error naming
// the first offending node. Requires the graph to be topologically sorted.
void validate(Graph& g);
// Graph inputs must have static shapes (all dims >= 1) before anything downstream is checked.
void validate_graph_inputs(const Graph& g);
// "" when a tensor of this dtype and shape can exist (its element count fits 63 bits and its bytes
// kMaxTensorBytes), else why not; checked for every graph input and inferred output.
std::string tensor_size_problem(DType t, const Shape& s);
// Validates a single node (used by passes that create nodes).
void validate_node(Graph& g, Node& n);

// Registration helper used by the ops_*.cc files.
struct SchemaRegistrar {
  explicit SchemaRegistrar(OpSchema s);
};

}  // namespace lowbit
