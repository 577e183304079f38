#include "lowbit/ir/op_schema.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

#include "lowbit/common/error.h"
#include "lowbit/ir/infer_helpers.h"

namespace lowbit {

// ---------------------------------------------------------------------------------------------
// InferContext

DType InferContext::dtype(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
  return g_.value(n_.inputs[i]).dtype;
}

const Shape& InferContext::shape(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
  return g_.value(n_.inputs[i]).shape;
}

const Tensor* InferContext::constant(size_t i) const { return has_input(i) ? g_.constant(n_.inputs[i]) : nullptr; }

std::vector<int64_t> InferContext::constant_ints(size_t i, const char* what) const {
  const Tensor& t = require_constant(*this, i, what);
  if (!dtype_in(t.dtype(), kIndex | kU8 | kI8))
    fail(n_.op + "'s " + what + " input must be an integer tensor, got " + dtype_name(t.dtype()));
  if (t.shape().size() > 1)
    fail(n_.op + "'s " + what + " input must be a scalar or 1-D, got shape " + shape_str(t.shape()));
  std::vector<int64_t> r(static_cast<size_t>(t.numel()));
  for (int64_t k = 0; k < t.numel(); ++k) r[static_cast<size_t>(k)] = read_int(t, k);
  return r;
}

void InferContext::set_output(size_t i, DType dtype, Shape shape) {
  if (i >= n_.outputs.size() || n_.outputs[i] == kNoValue) return;  // optional output not requested
  for (int64_t d : shape)
    if (d < 0) fail("inferred a negative dimension for output " + std::to_string(i) + " (" + shape_str(shape) + ")");
  if (std::string why = tensor_size_problem(dtype, shape); !why.empty()) fail("output " + std::to_string(i) + ": " + why);
  Value& v = g_.value(n_.outputs[i]);
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.shape_known = true;
}

void InferContext::fail(const std::string& reason) const { throw Error("node " + n_.label() + ": " + reason); }

void InferContext::require_dtype(size_t i, std::initializer_list<DType> allowed) const {
  DTypeSet s = 0;
  for (DType t : allowed) s |= dtype_bit(t);
  DType t = dtype(i);
  if (!dtype_in(t, s))
    fail("input " + std::to_string(i) + " ('" + g_.value(n_.inputs[i]).name + "') has dtype " + dtype_name(t) +
         ", expected " + dtype_set_str(s));
}

// ---------------------------------------------------------------------------------------------
// Shared helpers (infer_helpers.h)

std::string dtype_set_str(DTypeSet s) {
  std::vector<std::string> names;
  for (unsigned k = 0; k < 32; ++k)
    if (s & (DTypeSet{1} << k)) names.push_back(dtype_name(static_cast<DType>(k)));
  if (names.size() == 1) return names[0];
  std::string r = "one of ";
  for (size_t k = 0; k < names.size(); ++k) r += (k ? ", " : "") + names[k];
  return r;
}

void check_input_dtypes(const InferContext& ctx, std::initializer_list<InputDType> table) {
  size_t i = 0;
  for (const InputDType& row : table) {
    if (ctx.has_input(i) && !dtype_in(ctx.dtype(i), row.allowed))
      ctx.fail("input " + std::to_string(i) + " (" + row.name + ") has dtype " + dtype_name(ctx.dtype(i)) +
               ", expected " + dtype_set_str(row.allowed));
    ++i;
  }
}

void require_same_dtype(const InferContext& ctx, size_t a, size_t b) {
  if (ctx.dtype(a) != ctx.dtype(b))
    ctx.fail("inputs " + std::to_string(a) + " and " + std::to_string(b) + " must have the same dtype (got " +
             dtype_name(ctx.dtype(a)) + " and " + dtype_name(ctx.dtype(b)) + ")");
}

DType common_input_dtype(const InferContext& ctx, DTypeSet allowed) {
  std::optional<DType> first;
  size_t first_i = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    DType t = ctx.dtype(i);
    if (!dtype_in(t, allowed))
      ctx.fail("input " + std::to_string(i) + " has dtype " + dtype_name(t) + ", expected " + dtype_set_str(allowed));
    if (!first) {
      first = t;
      first_i = i;
    } else if (t != *first) {
      ctx.fail("inputs " + std::to_string(first_i) + " and " + std::to_string(i) + " must have the same dtype (got " +
               dtype_name(*first) + " and " + dtype_name(t) + ")");
    }
  }
  if (!first) ctx.fail("has no inputs");
  return *first;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t k = 0; k < r; ++k) {
    // Align from the right.
    int64_t da = k < r - a.size() ? 1 : a[k - (r - a.size())];
    int64_t db = k < r - b.size() ? 1 : b[k - (r - b.size())];
    if (da == db || db == 1) {
      out[k] = da;
    } else if (da == 1) {
      out[k] = db;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

Shape broadcast_inputs(const InferContext& ctx, const std::vector<size_t>& inputs) {
  std::optional<Shape> acc;
  std::string seen;
  for (size_t i : inputs) {
    if (!ctx.has_input(i)) continue;
    const Shape& s = ctx.shape(i);
    seen += (seen.empty() ? "" : ", ") + shape_str(s);
    if (!acc) {
      acc = s;
      continue;
    }
    auto b = broadcast_shapes(*acc, s);
    if (!b) ctx.fail("input shapes are not broadcast-compatible (" + seen + ")");
    acc = std::move(*b);
  }
  return acc ? *acc : Shape{};
}

bool broadcastable_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  size_t off = to.size() - from.size();
  for (size_t k = 0; k < from.size(); ++k)
    if (from[k] != 1 && from[k] != to[k + off]) return false;
  return true;
}

int64_t normalize_axis(const InferContext& ctx, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank)
    ctx.fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const InferContext& ctx, const std::vector<int64_t>& axes, int64_t rank,
                                    const char* what) {
  std::vector<int64_t> r;
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    int64_t n = normalize_axis(ctx, a, rank, what);
    if (!seen.insert(n).second) ctx.fail(std::string(what) + " " + ints_str(axes) + " contain a duplicate");
    r.push_back(n);
  }
  return r;
}

void require_rank(const InferContext& ctx, size_t i, int64_t rank, const char* what) {
  if (ctx.rank(i) != rank)
    ctx.fail(std::string(what) + " must have rank " + std::to_string(rank) + ", got shape " + shape_str(ctx.shape(i)));
}

void require_scalar(const InferContext& ctx, size_t i, const char* what) {
  if (num_elements(ctx.shape(i)) != 1 || ctx.rank(i) > 1)
    ctx.fail(std::string(what) + " must be a scalar, got shape " + shape_str(ctx.shape(i)));
}

const Tensor& require_constant(const InferContext& ctx, size_t i, const char* what) {
  const std::string& op = ctx.node().op;
  if (!ctx.has_input(i)) ctx.fail(op + "'s " + what + " input is missing");
  const Value& v = ctx.graph().value(ctx.node().inputs[i]);
  if (!v.constant)
    ctx.fail(op + "'s " + what + " input must be constant after folding (got computed value '" + v.name + "')");
  return *v.constant;
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string r = "[";
  for (size_t k = 0; k < v.size(); ++k) r += (k ? ", " : "") + std::to_string(v[k]);
  return r + "]";
}

// ---------------------------------------------------------------------------------------------
// Registry

namespace {

// Function-local so that registrars in other translation units can run in any order.
std::map<std::string, OpSchema, std::less<>>& registry() {
  static std::map<std::string, OpSchema, std::less<>> r;
  return r;
}

std::string arity_str(int lo, int hi, const char* noun) {
  std::string n = std::string(noun) + (hi == 1 && lo == 1 ? "" : "s");
  if (lo == hi) return std::to_string(lo) + " " + n;
  if (hi == std::numeric_limits<int>::max()) return "at least " + std::to_string(lo) + " " + n;
  return std::to_string(lo) + " to " + std::to_string(hi) + " " + n;
}

// Count without trailing omitted (kNoValue) entries.
int effective_count(const std::vector<ValueId>& ids) {
  size_t n = ids.size();
  while (n > 0 && ids[n - 1] == kNoValue) --n;
  return static_cast<int>(n);
}

}  // namespace

SchemaRegistrar::SchemaRegistrar(OpSchema s) {
  auto& r = registry();
  if (r.count(s.op)) {
    // A programming error (two files claim one op); there is no caller to throw to.
    std::fprintf(stderr, "lowbit: op schema '%s' registered twice\n", s.op.c_str());
    std::abort();
  }
  std::string op = s.op;
  r.emplace(std::move(op), std::move(s));
}

const OpSchema* find_schema(std::string_view op) {
  auto& r = registry();
  auto it = r.find(op);
  return it == r.end() ? nullptr : &it->second;
}

QuantPassthrough quant_passthrough(std::string_view op) {
  const OpSchema* s = find_schema(op);
  return s ? s->quant_passthrough : QuantPassthrough::no;
}

bool elementwise_map(std::string_view op) {
  const OpSchema* s = find_schema(op);
  return s && s->elementwise_map;
}

bool channel_map(std::string_view op) {
  const OpSchema* s = find_schema(op);
  return s && s->channel_map;
}

bool conv_post_op(std::string_view op) {
  const OpSchema* s = find_schema(op);
  return s && s->conv_post_op;
}

bool lowbit_quantized(std::string_view op) {
  const OpSchema* s = find_schema(op);
  return s && s->lowbit_quantized;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> ops;
  for (auto& [name, s] : registry()) ops.push_back(name);  // std::map keeps them sorted
  return ops;
}

// ---------------------------------------------------------------------------------------------
// Validation

void validate_node(Graph& g, Node& n) {
  InferContext ctx(g, n);
  const OpSchema* s = find_schema(n.op);
  if (!s) ctx.fail("unsupported op '" + n.op + "'");

  int nin = effective_count(n.inputs);
  if (nin < s->min_inputs || nin > s->max_inputs)
    ctx.fail("expects " + arity_str(s->min_inputs, s->max_inputs, "input") + ", got " + std::to_string(nin));
  int nout = effective_count(n.outputs);
  if (nout < s->min_outputs || nout > s->max_outputs)
    ctx.fail("expects " + arity_str(s->min_outputs, s->max_outputs, "output") + ", got " + std::to_string(nout));
  for (int i = 0; i < s->min_inputs; ++i)
    if (n.inputs[static_cast<size_t>(i)] == kNoValue) ctx.fail("required input " + std::to_string(i) + " is missing");
  for (int i = 0; i < s->min_outputs; ++i)
    if (n.outputs[static_cast<size_t>(i)] == kNoValue) ctx.fail("required output " + std::to_string(i) + " is missing");

  for (ValueId v : n.inputs) {
    if (v == kNoValue) continue;
    const Value& val = g.value(v);
    if (!val.shape_known) ctx.fail("input '" + val.name + "' is used before it is defined");
  }

  // Outputs are re-inferred from scratch so that a stale shape can never survive a rewrite.
  for (ValueId o : n.outputs)
    if (o != kNoValue) g.value(o).shape_known = false;
  s->infer(ctx);
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] != kNoValue && !g.value(n.outputs[i]).shape_known)
      ctx.fail("internal error: schema did not infer output " + std::to_string(i));
}

void validate(Graph& g) {
  validate_graph_inputs(g);

  // Forget every computed shape: shapes are recomputed in order, which also catches nodes that
  // read a value before its producer runs.
  std::vector<char> is_input(g.values.size(), 0);
  for (ValueId id : g.inputs) is_input[static_cast<size_t>(id)] = 1;
  for (const Node& n : g.nodes)
    for (ValueId o : n.outputs)
      if (o != kNoValue && !is_input[static_cast<size_t>(o)] && !g.value(o).constant) g.value(o).shape_known = false;

  for (Node& n : g.nodes) validate_node(g, n);

  for (ValueId id : g.outputs)
    if (!g.value(id).shape_known)
      throw Error("graph output '" + g.value(id).name + "' is never produced by any node");
}

}  // namespace lowbit
