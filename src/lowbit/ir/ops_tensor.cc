// Schemas of the data-movement and shape ops. Their shape operands (Reshape's shape, Slice's
// starts, ...) must be constants when validated; constant folding makes them so progressively.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lowbit/ir/infer_helpers.h"

namespace lowbit {
namespace {

constexpr int kMany = std::numeric_limits<int>::max();

void infer_reshape(InferContext& c) {
  check_input_dtypes(c, {{"data", kAnyByte}, {"shape", kIndex}});
  const Shape& x = c.shape(0);
  const auto spec = c.constant_ints(1, "shape");
  const bool allowzero = c.attrs().get_int("allowzero", 0) != 0;
  Shape y(spec.size());
  int64_t infer_at = -1;
  bool has_zero = false;
  for (size_t k = 0; k < spec.size(); ++k) {
    int64_t v = spec[k];
    if (v == -1) {
      c.require(infer_at < 0, "shape " + ints_str(spec) + " has more than one -1");
      infer_at = static_cast<int64_t>(k);
      y[k] = 1;
    } else if (v == 0 && !allowzero) {
      c.require(k < x.size(), "shape " + ints_str(spec) + " copies dimension " + std::to_string(k) +
                                  " (0) but the input " + shape_str(x) + " has rank " + std::to_string(x.size()));
      y[k] = x[k];
    } else {
      c.require(v >= 0, "shape " + ints_str(spec) + " has an invalid value " + std::to_string(v));
      has_zero |= v == 0;
      y[k] = v;
    }
  }
  c.require(!(has_zero && infer_at >= 0), "shape " + ints_str(spec) + " combines -1 with a zero dimension (allowzero)");
  const int64_t n = num_elements(x);
  if (infer_at >= 0) {
    // Checked: the other dims come from the model and their product may overflow (fuzz finding).
    int64_t known = checked_num_elements(y);
    c.require(known > 0 && n % known == 0,
              "cannot reshape " + shape_str(x) + " (" + std::to_string(n) + " elements) to " + ints_str(spec));
    y[static_cast<size_t>(infer_at)] = n / known;
  }
  c.require(checked_num_elements(y) == n, "cannot reshape " + shape_str(x) + " (" + std::to_string(n) + " elements) to " +
                                      ints_str(spec));
  c.set_output(0, c.dtype(0), y);
}

void infer_transpose(InferContext& c) {
  check_input_dtypes(c, {{"data", kAnyByte}});
  const Shape& x = c.shape(0);
  const int64_t r = c.rank(0);
  std::vector<int64_t> perm(static_cast<size_t>(r));
  for (int64_t k = 0; k < r; ++k) perm[static_cast<size_t>(k)] = r - 1 - k;
  if (c.attrs().has("perm")) perm = c.attrs().get_ints("perm");
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool ok = static_cast<int64_t>(perm.size()) == r;
  for (int64_t k = 0; ok && k < r; ++k) ok = sorted[static_cast<size_t>(k)] == k;
  c.require(ok, "perm " + ints_str(perm) + " is not a permutation of the " + std::to_string(r) + " input axes");
  Shape y(static_cast<size_t>(r));
  for (size_t k = 0; k < y.size(); ++k) y[k] = x[static_cast<size_t>(perm[k])];
  c.set_output(0, c.dtype(0), y);
}

void infer_concat(InferContext& c) {
  DType t = common_input_dtype(c, kAnyByte);
  c.require(c.attrs().has("axis"), "axis attribute is required");
  const Shape& first = c.shape(0);
  const int64_t r = static_cast<int64_t>(first.size());
  c.require(r >= 1, "cannot concatenate scalars");
  const size_t axis = static_cast<size_t>(normalize_axis(c, c.attrs().get_int("axis", 0), r));
  Shape y = first;
  y[axis] = 0;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) continue;
    const Shape& s = c.shape(i);
    bool ok = s.size() == first.size();
    for (size_t k = 0; ok && k < s.size(); ++k) ok = k == axis || s[k] == first[k];
    c.require(ok, "input " + std::to_string(i) + " has shape " + shape_str(s) + ", incompatible with " +
                      shape_str(first) + " for concatenation on axis " + std::to_string(axis));
    y[axis] += s[axis];
  }
  c.set_output(0, t, y);
}

void infer_split(InferContext& c) {
  check_input_dtypes(c, {{"input", kAnyByte}, {"split", kIndex}});
  const Shape& x = c.shape(0);
  c.require(!x.empty(), "cannot split a scalar");
  const size_t axis = static_cast<size_t>(normalize_axis(c, c.attrs().get_int("axis", 0), c.rank(0)));
  const int64_t n = static_cast<int64_t>(c.node().outputs.size());
  const int64_t dim = x[axis];
  std::vector<int64_t> sizes;
  if (c.has_input(1)) {
    sizes = c.constant_ints(1, "split");
    int64_t sum = 0;
    for (int64_t s : sizes) {
      c.require(s >= 0, "split " + ints_str(sizes) + " has a negative size");
      sum += s;
    }
    c.require(static_cast<int64_t>(sizes.size()) == n, "split " + ints_str(sizes) + " has " +
                                                           std::to_string(sizes.size()) + " entries for " +
                                                           std::to_string(n) + " outputs");
    c.require(sum == dim, "split " + ints_str(sizes) + " sums to " + std::to_string(sum) + ", but axis " +
                              std::to_string(axis) + " has size " + std::to_string(dim));
  } else {
    const bool has_num = c.attrs().has("num_outputs");
    if (has_num)
      c.require(c.attrs().get_int("num_outputs", 0) == n, "num_outputs " +
                                                               std::to_string(c.attrs().get_int("num_outputs", 0)) +
                                                               " does not match the " + std::to_string(n) + " outputs");
    // Opset 18 (num_outputs) lets the last chunk be smaller; earlier opsets need an even split.
    const int64_t chunk = has_num ? (dim + n - 1) / n : dim / n;
    c.require(has_num ? chunk * (n - 1) < dim : dim % n == 0,
              "axis " + std::to_string(axis) + " of size " + std::to_string(dim) + " cannot be split into " +
                  std::to_string(n) + " parts");
    sizes.assign(static_cast<size_t>(n), chunk);
    sizes.back() = dim - chunk * (n - 1);
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    Shape y = x;
    y[axis] = sizes[i];
    c.set_output(i, c.dtype(0), y);
  }
}

void infer_shape(InferContext& c) {
  const int64_t r = c.rank(0);
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t{0}, r); };
  int64_t start = clamp(c.attrs().get_int("start", 0));
  int64_t end = clamp(c.attrs().get_int("end", r));
  c.set_output(0, DType::i64, {std::max<int64_t>(0, end - start)});
}

void infer_gather(InferContext& c) {
  check_input_dtypes(c, {{"data", kAnyByte}, {"indices", kIndex}});
  const Shape& x = c.shape(0);
  c.require(!x.empty(), "cannot gather from a scalar");
  const size_t axis = static_cast<size_t>(normalize_axis(c, c.attrs().get_int("axis", 0), c.rank(0)));
  if (const Tensor* idx = c.constant(1)) {
    for (int64_t k = 0; k < idx->numel(); ++k) {
      int64_t v = read_int(*idx, k);
      c.require(v >= -x[axis] && v < x[axis], "index " + std::to_string(v) + " is out of range for axis " +
                                                  std::to_string(axis) + " of size " + std::to_string(x[axis]));
    }
  }
  Shape y(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(axis));
  y.insert(y.end(), c.shape(1).begin(), c.shape(1).end());
  y.insert(y.end(), x.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.end());
  c.set_output(0, c.dtype(0), y);
}

void infer_cast(InferContext& c) {
  check_input_dtypes(c, {{"input", kAnyByte}});
  c.require(c.attrs().has("to"), "'to' attribute is required");
  const int64_t to = c.attrs().get_int("to", 0);
  // ONNX TensorProto.DataType values.
  DType t;
  switch (to) {
    case 1: t = DType::f32; break;
    case 2: t = DType::u8; break;
    case 3: t = DType::i8; break;
    case 6: t = DType::i32; break;
    case 7: t = DType::i64; break;
    case 9: t = DType::boolean; break;
    default:
      c.fail("Cast to ONNX type " + std::to_string(to) + " is not supported (float, uint8, int8, int32, int64, bool)");
  }
  c.set_output(0, t, c.shape(0));
}

void infer_slice(InferContext& c) {
  check_input_dtypes(c, {{"data", kAnyByte}, {"starts", kIndex}, {"ends", kIndex}, {"axes", kIndex},
                         {"steps", kIndex}});
  const Shape& x = c.shape(0);
  const int64_t r = c.rank(0);
  const auto starts = c.constant_ints(1, "starts");
  const auto ends = c.constant_ints(2, "ends");
  const size_t n = starts.size();
  c.require(ends.size() == n, "starts " + ints_str(starts) + " and ends " + ints_str(ends) + " differ in length");
  std::vector<int64_t> axes(n), steps(n, 1);
  for (size_t k = 0; k < n; ++k) axes[k] = static_cast<int64_t>(k);
  if (c.has_input(3)) axes = normalize_axes(c, c.constant_ints(3, "axes"), r);
  if (c.has_input(4)) steps = c.constant_ints(4, "steps");
  c.require(axes.size() == n && steps.size() == n, "starts, ends, axes and steps must have the same length");
  Shape y = x;
  for (size_t k = 0; k < n; ++k) {
    const size_t ax = static_cast<size_t>(axes[k]);
    const int64_t d = x[ax], s = steps[k];
    c.require(s != 0, "steps " + ints_str(steps) + " contain 0");
    if (d == 0) continue;
    int64_t b = starts[k] < 0 ? starts[k] + d : starts[k];
    int64_t e = ends[k] < 0 ? ends[k] + d : ends[k];
    // Forward slices clamp to [0, d]; backward ones to [-1, d-1] (end -1 = "through element 0").
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      y[ax] = e > b ? (e - b - 1) / s + 1 : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      y[ax] = b > e ? (b - e - 1) / -s + 1 : 0;
    }
  }
  c.set_output(0, c.dtype(0), y);
}

void infer_unsqueeze(InferContext& c) {
  check_input_dtypes(c, {{"data", kAnyByte}, {"axes", kIndex}});
  const Shape& x = c.shape(0);
  const auto raw = c.constant_ints(1, "axes");
  const int64_t out_rank = c.rank(0) + static_cast<int64_t>(raw.size());
  std::vector<char> inserted(static_cast<size_t>(out_rank), 0);
  for (int64_t a : normalize_axes(c, raw, out_rank)) inserted[static_cast<size_t>(a)] = 1;
  Shape y;
  size_t src = 0;
  for (int64_t k = 0; k < out_rank; ++k) y.push_back(inserted[static_cast<size_t>(k)] ? 1 : x[src++]);
  c.set_output(0, c.dtype(0), y);
}

void infer_squeeze(InferContext& c) {
  check_input_dtypes(c, {{"data", kAnyByte}, {"axes", kIndex}});
  const Shape& x = c.shape(0);
  std::vector<char> drop(x.size(), 0);
  if (c.has_input(1)) {
    for (int64_t a : normalize_axes(c, c.constant_ints(1, "axes"), c.rank(0))) {
      c.require(x[static_cast<size_t>(a)] == 1, "cannot squeeze axis " + std::to_string(a) + " of size " +
                                                    std::to_string(x[static_cast<size_t>(a)]) + " (shape " +
                                                    shape_str(x) + ")");
      drop[static_cast<size_t>(a)] = 1;
    }
  } else {
    for (size_t k = 0; k < x.size(); ++k) drop[k] = x[k] == 1;
  }
  Shape y;
  for (size_t k = 0; k < x.size(); ++k)
    if (!drop[k]) y.push_back(x[k]);
  c.set_output(0, c.dtype(0), y);
}

void infer_constant(InferContext& c) {
  const Attributes& a = c.attrs();
  int given = 0;
  for (const char* k : {"value", "value_float", "value_floats", "value_int", "value_ints", "value_string",
                        "value_strings", "sparse_value"})
    given += a.has(k);
  c.require(given == 1, "exactly one value attribute must be given, found " + std::to_string(given));
  if (const Tensor* t = a.has("value") ? a.get_tensor("value") : nullptr) {
    c.set_output(0, t->dtype(), t->shape());
  } else if (a.has("value_float")) {
    c.set_output(0, DType::f32, {});
  } else if (a.has("value_floats")) {
    c.set_output(0, DType::f32, {static_cast<int64_t>(a.get_floats("value_floats").size())});
  } else if (a.has("value_int")) {
    c.set_output(0, DType::i64, {});
  } else if (a.has("value_ints")) {
    c.set_output(0, DType::i64, {static_cast<int64_t>(a.get_ints("value_ints").size())});
  } else {
    c.fail("string and sparse constants are not supported");
  }
}

void infer_constant_of_shape(InferContext& c) {
  check_input_dtypes(c, {{"input", kIndex}});
  const auto dims = c.constant_ints(0, "shape");
  for (int64_t d : dims) c.require(d >= 0, "shape " + ints_str(dims) + " has a negative dimension");
  DType t = DType::f32;
  if (const Tensor* v = c.attrs().get_tensor("value")) {
    c.require(v->numel() == 1, "value must hold exactly one element, got shape " + shape_str(v->shape()));
    t = v->dtype();
  }
  c.set_output(0, t, Shape(dims.begin(), dims.end()));
}

void infer_range(InferContext& c) {
  DType t = common_input_dtype(c, kNumeric);
  static const char* names[] = {"start", "limit", "delta"};
  double v[3];
  for (size_t i = 0; i < 3; ++i) {
    require_scalar(c, i, names[i]);
    const Tensor& k = require_constant(c, i, names[i]);
    v[i] = t == DType::f32 ? static_cast<double>(read_float(k, 0)) : static_cast<double>(read_int(k, 0));
  }
  c.require(v[2] != 0, "delta must not be 0");
  const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((v[1] - v[0]) / v[2])));
  c.set_output(0, t, {n});
}

void infer_expand(InferContext& c) {
  check_input_dtypes(c, {{"input", kAnyByte}, {"shape", kIndex}});
  const auto dims = c.constant_ints(1, "shape");
  auto y = broadcast_shapes(c.shape(0), Shape(dims.begin(), dims.end()));
  c.require(y.has_value(), "input shape " + shape_str(c.shape(0)) + " cannot be expanded to " + ints_str(dims));
  c.set_output(0, c.dtype(0), *y);
}

void infer_tile(InferContext& c) {
  check_input_dtypes(c, {{"input", kAnyByte}, {"repeats", kIndex}});
  const auto reps = c.constant_ints(1, "repeats");
  Shape y = c.shape(0);
  c.require(reps.size() == y.size(), "repeats " + ints_str(reps) + " must have one value per input dimension (" +
                                         std::to_string(y.size()) + ")");
  for (size_t k = 0; k < y.size(); ++k) {
    c.require(reps[k] >= 0, "repeats " + ints_str(reps) + " must be >= 0");
    y[k] *= reps[k];
  }
  c.set_output(0, c.dtype(0), y);
}

// DepthToSpace (opset 13): [N, C, H, W] -> [N, C / b^2, H b, W b]. DCR reads channel
// (i b + j) (C / b^2) + c for block position (i, j) of output channel c; CRD reads c b^2 + i b + j
// (what a ConvTranspose with kernel = stride lowers to, passes/lower_conv_transpose.cc).
void infer_depth_to_space(InferContext& c) {
  check_input_dtypes(c, {{"input", kAnyByte}});
  require_rank(c, 0, 4, "input");
  const int64_t b = c.attrs().get_int("blocksize", 0);
  const std::string mode = c.attrs().get_string("mode", "DCR");
  c.require(b >= 1, "blocksize " + std::to_string(b) + " must be >= 1");
  c.require(mode == "DCR" || mode == "CRD", "mode '" + mode + "' must be DCR or CRD");
  const Shape& x = c.shape(0);
  c.require(x[1] % (b * b) == 0, "blocksize " + std::to_string(b) + " squared does not divide the " +
                                     std::to_string(x[1]) + " channels");
  c.set_output(0, c.dtype(0), {x[0], x[1] / (b * b), x[2] * b, x[3] * b});
}

const bool kRegistered = [] {
  SchemaRegistrar({.op = "DepthToSpace", .min_inputs = 1, .max_inputs = 1, .infer = infer_depth_to_space,
                   .quant_passthrough = QuantPassthrough::moves});
  SchemaRegistrar({.op = "Reshape", .min_inputs = 2, .max_inputs = 2, .infer = infer_reshape,
                   .quant_passthrough = QuantPassthrough::moves});
  // Transpose, Slice and Split move codes as they are (ShuffleNet's channel shuffle and split
  // stay in u8 between its quantized convs).
  SchemaRegistrar({.op = "Transpose", .min_inputs = 1, .max_inputs = 1, .infer = infer_transpose,
                   .quant_passthrough = QuantPassthrough::moves});
  SchemaRegistrar({.op = "Concat", .min_inputs = 1, .max_inputs = kMany, .infer = infer_concat});
  SchemaRegistrar({.op = "Split", .min_inputs = 1, .max_inputs = 2, .min_outputs = 1, .max_outputs = kMany,
                   .infer = infer_split, .quant_passthrough = QuantPassthrough::moves});
  SchemaRegistrar({.op = "Shape", .min_inputs = 1, .max_inputs = 1, .infer = infer_shape});
  SchemaRegistrar({.op = "Gather", .min_inputs = 2, .max_inputs = 2, .infer = infer_gather});
  SchemaRegistrar({.op = "Cast", .min_inputs = 1, .max_inputs = 1, .infer = infer_cast});
  SchemaRegistrar({.op = "Slice", .min_inputs = 3, .max_inputs = 5, .infer = infer_slice,
                   .quant_passthrough = QuantPassthrough::moves});
  SchemaRegistrar({.op = "Unsqueeze", .min_inputs = 2, .max_inputs = 2, .infer = infer_unsqueeze,
                   .quant_passthrough = QuantPassthrough::moves});
  SchemaRegistrar({.op = "Squeeze", .min_inputs = 1, .max_inputs = 2, .infer = infer_squeeze,
                   .quant_passthrough = QuantPassthrough::moves});
  SchemaRegistrar({.op = "Constant", .min_inputs = 0, .max_inputs = 0, .infer = infer_constant});
  SchemaRegistrar({.op = "ConstantOfShape", .min_inputs = 1, .max_inputs = 1, .infer = infer_constant_of_shape});
  SchemaRegistrar({.op = "Range", .min_inputs = 3, .max_inputs = 3, .infer = infer_range});
  SchemaRegistrar({.op = "Expand", .min_inputs = 2, .max_inputs = 2, .infer = infer_expand});
  SchemaRegistrar({.op = "Tile", .min_inputs = 2, .max_inputs = 2, .infer = infer_tile});
  return true;
}();

}  // namespace
}  // namespace lowbit
