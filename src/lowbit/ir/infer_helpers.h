#pragma once
// Building blocks shared by the op schemas (ir/ops_*.cc): dtype tables, broadcasting and axis
// handling. Every check fails through InferContext::fail so that messages name the node.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "lowbit/ir/op_schema.h"

namespace lowbit {

// A set of dtypes as a bitmask, so that schemas can state signatures as short tables.
using DTypeSet = uint32_t;
constexpr DTypeSet dtype_bit(DType t) { return DTypeSet{1} << static_cast<unsigned>(t); }
constexpr bool dtype_in(DType t, DTypeSet s) { return (s & dtype_bit(t)) != 0; }

constexpr DTypeSet kF32 = dtype_bit(DType::f32);
constexpr DTypeSet kI64 = dtype_bit(DType::i64);
constexpr DTypeSet kI32 = dtype_bit(DType::i32);
constexpr DTypeSet kU8 = dtype_bit(DType::u8);
constexpr DTypeSet kI8 = dtype_bit(DType::i8);
constexpr DTypeSet kBool = dtype_bit(DType::boolean);
// Quantized weights of QConv / QGemm: int8, or 4- and 2-bit codes packed (ir/codes.h).
constexpr DTypeSet kQWeights = kI8 | dtype_bit(DType::i4) | dtype_bit(DType::i2) | dtype_bit(DType::b1);
constexpr DTypeSet kIndex = kI64 | kI32;            // indices, shapes, axes
constexpr DTypeSet kNumeric = kF32 | kI64 | kI32;   // arithmetic (i64/i32 for shape computations)
constexpr DTypeSet kAnyByte = kF32 | kI64 | kI32 | kU8 | kI8 | kBool;  // data movement: any byte-addressable dtype

// "f32" or "one of i64, i32".
std::string dtype_set_str(DTypeSet s);

// One row of an op's input signature: the input's formal name (as in the ONNX spec) and the
// dtypes it accepts. Omitted optional inputs are skipped.
struct InputDType {
  const char* name;
  DTypeSet allowed;
};
// Row k describes input k: fails with "input 1 (W) has dtype i8, expected f32".
void check_input_dtypes(const InferContext& ctx, std::initializer_list<InputDType> table);
// Inputs a and b (both present) must share a dtype.
void require_same_dtype(const InferContext& ctx, size_t a, size_t b);
// Every present input must have the same dtype, one of `allowed`; returns it.
DType common_input_dtype(const InferContext& ctx, DTypeSet allowed);

// Multidirectional (numpy) broadcasting; nullopt when incompatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);
// Broadcasts the shapes of the given (present) inputs or fails naming the offending shapes.
Shape broadcast_inputs(const InferContext& ctx, const std::vector<size_t>& inputs);
// Unidirectional broadcasting: `from` can be broadcast to `to` without changing `to`.
bool broadcastable_to(const Shape& from, const Shape& to);

// Maps axis in [-rank, rank) to [0, rank); fails naming `what` when out of range.
int64_t normalize_axis(const InferContext& ctx, int64_t axis, int64_t rank, const char* what = "axis");
// Normalizes a list of axes and fails on duplicates.
std::vector<int64_t> normalize_axes(const InferContext& ctx, const std::vector<int64_t>& axes, int64_t rank,
                                    const char* what = "axes");

// Input i must have the given rank; `what` names the tensor in the message.
void require_rank(const InferContext& ctx, size_t i, int64_t rank, const char* what);
// Input i must hold exactly one element (a scalar, or a 1-element tensor).
void require_scalar(const InferContext& ctx, size_t i, const char* what);

// The constant payload of input i; fails like InferContext::constant_ints when it is computed at
// run time ("Resize's scales input must be constant after folding (got computed value 'x')").
const Tensor& require_constant(const InferContext& ctx, size_t i, const char* what);

// "[1, 2, 3]" for messages about attribute and constant lists.
std::string ints_str(const std::vector<int64_t>& v);

}  // namespace lowbit
