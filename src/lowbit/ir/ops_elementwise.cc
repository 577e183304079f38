// Schemas of the broadcasting elementwise ops. Arithmetic accepts i64/i32 besides f32 because
// ONNX exporters compute shapes with it (folded away before kernels run).
#include <limits>

#include "lowbit/ir/infer_helpers.h"

namespace lowbit {
namespace {

std::vector<size_t> present_inputs(const InferContext& c) {
  std::vector<size_t> r;
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.has_input(i)) r.push_back(i);
  return r;
}

// Add, Sub, Mul, Div, Min, Max: one common numeric dtype, result of the same dtype.
void infer_arithmetic(InferContext& c) {
  DType t = common_input_dtype(c, kNumeric);
  c.set_output(0, t, broadcast_inputs(c, present_inputs(c)));
}

// Pow: the exponent may have another numeric type; the result has the base's.
void infer_pow(InferContext& c) {
  check_input_dtypes(c, {{"X", kNumeric}, {"Y", kNumeric}});
  c.set_output(0, c.dtype(0), broadcast_inputs(c, {0, 1}));
}

void infer_equal(InferContext& c) {
  common_input_dtype(c, kAnyByte);
  c.set_output(0, DType::boolean, broadcast_inputs(c, {0, 1}));
}

void infer_compare(InferContext& c) {
  common_input_dtype(c, kNumeric | kU8 | kI8);
  c.set_output(0, DType::boolean, broadcast_inputs(c, {0, 1}));
}

void infer_where(InferContext& c) {
  check_input_dtypes(c, {{"condition", kBool}, {"X", kAnyByte}, {"Y", kAnyByte}});
  require_same_dtype(c, 1, 2);
  c.set_output(0, c.dtype(1), broadcast_inputs(c, {0, 1, 2}));
}

const bool kRegistered = [] {
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    SchemaRegistrar({.op = op, .min_inputs = 2, .max_inputs = 2, .infer = infer_arithmetic});
  // Variadic in ONNX.
  for (const char* op : {"Min", "Max"})
    SchemaRegistrar(
        {.op = op, .min_inputs = 1, .max_inputs = std::numeric_limits<int>::max(), .infer = infer_arithmetic});
  SchemaRegistrar({.op = "Pow", .min_inputs = 2, .max_inputs = 2, .infer = infer_pow});
  SchemaRegistrar({.op = "Equal", .min_inputs = 2, .max_inputs = 2, .infer = infer_equal});
  for (const char* op : {"Less", "Greater"})
    SchemaRegistrar({.op = op, .min_inputs = 2, .max_inputs = 2, .infer = infer_compare});
  SchemaRegistrar({.op = "Where", .min_inputs = 3, .max_inputs = 3, .infer = infer_where});
  return true;
}();

}  // namespace
}  // namespace lowbit
