// Schemas of the fp32 neural-network ops: convolution, normalization, activations, pooling,
// reductions, matrix products and resampling.
#include <cmath>
#include <limits>

#include "lowbit/ir/codes.h"
#include "lowbit/ir/infer_helpers.h"
#include "lowbit/ir/op_params.h"

namespace lowbit {
namespace {


void check_act_range(const InferContext& c) {
  float lo = c.attrs().get_float("act_min", -std::numeric_limits<float>::infinity());
  float hi = c.attrs().get_float("act_max", std::numeric_limits<float>::infinity());
  c.require(lo <= hi, "act_min " + std::to_string(lo) + " exceeds act_max " + std::to_string(hi));
}

// --- Convolution ---------------------------------------------------------------------------------

void infer_conv(InferContext& c) {
  check_input_dtypes(c, {{"X", kF32}, {"W", kF32}, {"B", kF32}, {"residual", kF32}});
  Conv2dParams p = conv2d_params(c.graph(), c.node());
  c.set_output(0, DType::f32, {p.N, p.M, p.OH, p.OW});
}

void infer_conv_transpose(InferContext& c) {
  check_input_dtypes(c, {{"X", kF32}, {"W", kF32}, {"B", kF32}});
  const Shape& x = c.shape(0);
  const Shape& w = c.shape(1);
  if (x.size() == 3 || x.size() == 5)
    c.fail("only 2-D transposed convolution is supported (input rank " + std::to_string(x.size()) + ")");
  require_rank(c, 0, 4, "X");
  require_rank(c, 1, 4, "weight W [C, M/group, KH, KW]");
  const Attributes& a = c.attrs();
  int64_t group = a.get_int("group", 1);
  c.require(group >= 1, "group " + std::to_string(group) + " must be >= 1");
  c.require(w[0] == x[1], "weight shape " + shape_str(w) + " does not match the " + std::to_string(x[1]) +
                              " input channels (W[0] must equal C)");
  c.require(x[1] % group == 0,
            "group " + std::to_string(group) + " does not divide the " + std::to_string(x[1]) + " input channels");
  const int64_t M = w[1] * group;
  if (a.has("kernel_shape")) {
    auto ks = a.get_ints("kernel_shape");
    c.require(ks.size() == 2 && ks[0] == w[2] && ks[1] == w[3],
              "kernel_shape " + ints_str(ks) + " does not match weight shape " + shape_str(w));
  }
  auto strides = a.get_ints("strides", {1, 1});
  auto dilations = a.get_ints("dilations", {1, 1});
  auto pads = a.get_ints("pads", {0, 0, 0, 0});
  auto out_pad = a.get_ints("output_padding", {0, 0});
  auto out_shape = a.get_ints("output_shape");
  std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  c.require(strides.size() == 2 && strides[0] >= 1 && strides[1] >= 1, "strides " + ints_str(strides) + " invalid");
  c.require(dilations.size() == 2 && dilations[0] >= 1 && dilations[1] >= 1,
            "dilations " + ints_str(dilations) + " invalid");
  c.require(pads.size() == 4, "pads " + ints_str(pads) + " must have 4 values [top, left, bottom, right]");
  c.require(out_pad.size() == 2, "output_padding " + ints_str(out_pad) + " must have 2 values");
  c.require(auto_pad == "NOTSET" || auto_pad == "VALID" || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER",
            "unknown auto_pad '" + auto_pad + "'");
  if (out_shape.size() == 4) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);  // [N, M, H, W] form
  c.require(out_shape.empty() || out_shape.size() == 2, "output_shape " + ints_str(out_shape) + " must have 2 values");

  Shape y = {x[0], M, 0, 0};
  for (size_t i = 0; i < 2; ++i) {
    int64_t in = x[2 + i], k = w[2 + i], s = strides[i], d = dilations[i], op = out_pad[i];
    c.require(op >= 0 && (op < s || op < d), "output_padding " + ints_str(out_pad) +
                                                 " must be smaller than the stride or the dilation");
    int64_t full = s * (in - 1) + op + (k - 1) * d + 1;  // output size with no padding
    int64_t out;
    if (!out_shape.empty()) {
      out = out_shape[i];
      c.require(out <= full, "output_shape " + ints_str(out_shape) + " is larger than the unpadded output (" +
                                 std::to_string(full) + ")");
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = in * s;
    } else if (auto_pad == "VALID") {
      out = full;
    } else {
      c.require(pads[i] >= 0 && pads[i + 2] >= 0, "pads " + ints_str(pads) + " must be >= 0");
      out = full - pads[i] - pads[i + 2];
    }
    c.require(out >= 1, "output spatial size would be " + std::to_string(out));
    y[2 + i] = out;
  }
  if (c.has_input(2))
    c.require(c.shape(2) == Shape{M}, "bias B must have shape " + std::to_string(M) + ", got " + shape_str(c.shape(2)));
  c.set_output(0, DType::f32, y);
}

// --- Normalization and activations -------------------------------------------------------------

void infer_batch_norm(InferContext& c) {
  check_input_dtypes(c, {{"X", kF32}, {"scale", kF32}, {"B", kF32}, {"input_mean", kF32}, {"input_var", kF32}});
  c.require(c.rank(0) >= 2, "X must have rank >= 2 (N, C, ...), got shape " + shape_str(c.shape(0)));
  c.require(c.attrs().get_int("training_mode", 0) == 0, "training_mode=1 is not supported (inference only)");
  const int64_t C = c.shape(0)[1];
  static const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i)
    c.require(c.shape(i) == Shape{C}, "input " + std::to_string(i) + " (" + names[i] + ") must have shape " +
                                          std::to_string(C) + ", got " + shape_str(c.shape(i)));
  c.set_output(0, DType::f32, c.shape(0));
  // Training-mode statistics outputs of older opsets: never computed, typed for completeness.
  for (size_t i = 1; i < 5; ++i) c.set_output(i, DType::f32, {C});
}

void infer_unary_f32(InferContext& c) {
  check_input_dtypes(c, {{"X", kF32}});
  c.set_output(0, DType::f32, c.shape(0));
}

void infer_unary_numeric(InferContext& c) {
  check_input_dtypes(c, {{"X", kNumeric}});
  c.set_output(0, c.dtype(0), c.shape(0));
}

void infer_clip(InferContext& c) {
  // Integers too (ONNX Clip-12): u8 codes clipped to a narrower code range are how QDQ models spell
  // 4- and 2-bit activations in 8-bit storage (QuantizeLinear -> Clip -> DequantizeLinear, QCDQ).
  check_input_dtypes(c, {{"input", kF32 | kU8 | kI8 | kI32}, {"min", kF32 | kU8 | kI8 | kI32},
                         {"max", kF32 | kU8 | kI8 | kI32}});
  for (size_t i = 1; i < 3; ++i)
    if (c.has_input(i)) {
      require_scalar(c, i, i == 1 ? "min" : "max");
      require_same_dtype(c, 0, i);
    }
  c.set_output(0, c.dtype(0), c.shape(0));
}

void infer_softmax(InferContext& c) {
  check_input_dtypes(c, {{"input", kF32}});
  c.require(c.rank(0) >= 1, "input must have rank >= 1");
  normalize_axis(c, c.attrs().get_int("axis", -1), c.rank(0));
  c.set_output(0, DType::f32, c.shape(0));
}

// --- Pooling -----------------------------------------------------------------------------------

// MaxPool, AveragePool and GlobalAveragePool also run on quantized u8 activations
// (notes/quant_ir.md); the output keeps the input's dtype.
void infer_pool(InferContext& c) {
  const bool is_max = c.node().op == "MaxPool";
  // MaxPool of packed signs (b1, ir/codes.h): the max of +-1 values is an AND of their sign bits.
  check_input_dtypes(c, {{"X", is_max ? kF32 | kU8 | dtype_bit(DType::b1) : kF32 | kU8}});
  if (c.dtype(0) == DType::b1)
    c.require(c.rank(0) == 4 && c.shape(0)[1] % kSignWordBits == 0,
              "packed signs (b1) need NCHW with C a multiple of 64, got " + shape_str(c.shape(0)));
  if (is_max && c.node().outputs.size() > 1 && c.node().outputs[1] != kNoValue)
    c.fail("MaxPool Indices output unsupported");
  Pool2dParams p = pool2d_params(c.graph(), c.node());
  c.set_output(0, c.dtype(0), {p.N, p.C, p.OH, p.OW});
}

void infer_global_pool(InferContext& c) {
  check_input_dtypes(c, {{"X", c.node().op == "GlobalAveragePool" ? kF32 | kU8 : kF32}});
  if (c.rank(0) == 3 || c.rank(0) == 5)
    c.fail("only 2-D pooling is supported (input rank " + std::to_string(c.rank(0)) + ")");
  require_rank(c, 0, 4, "X");
  c.set_output(0, c.dtype(0), {c.shape(0)[0], c.shape(0)[1], 1, 1});
  if (c.dtype(0) != DType::u8) return;
  // u8 codes are requantized to the output's parameters (kernels/qu8-pool): per tensor, positive
  // finite scales, unsigned codes of at most 8 bits with the zero point among them.
  for (ValueId v : {c.node().inputs[0], c.node().outputs[0]}) {
    const Value& val = c.graph().value(v);
    if (!val.quant) continue;
    const QuantParams& q = *val.quant;
    c.require(q.scale.size() == 1 && q.zero_point.size() == 1,
              "'" + val.name + "': u8 GlobalAveragePool needs per-tensor quantization");
    c.require(q.scale[0] > 0.f && std::isfinite(q.scale[0]), "'" + val.name + "' has a scale that is not positive and finite");
    const DTypeInfo& code = dtype_info(code_dtype(val));
    c.require(!code.is_signed && !code.is_float && code.bits <= 8,
              "'" + val.name + "': " + code.name + " codes cannot be stored as u8");
    const CodeRange r = code_range(val);
    c.require(q.zero_point[0] >= r.lo && q.zero_point[0] <= r.hi,
              "'" + val.name + "': zero point " + std::to_string(q.zero_point[0]) + " is outside its codes");
  }
}

// ReduceMean/ReduceMax take `axes` as an attribute up to opset 17, ReduceSum as an input from
// opset 13: both forms are accepted.
void infer_reduce(InferContext& c) {
  check_input_dtypes(c, {{"data", kF32}, {"axes", kIndex}});
  const int64_t r = c.rank(0);
  c.require(!(c.attrs().has("axes") && c.has_input(1)), "axes given both as attribute and as input");
  std::vector<int64_t> axes = c.has_input(1) ? c.constant_ints(1, "axes") : c.attrs().get_ints("axes");
  const bool keepdims = c.attrs().get_int("keepdims", 1) != 0;
  if (axes.empty() && c.attrs().get_int("noop_with_empty_axes", 0) != 0) {
    c.set_output(0, DType::f32, c.shape(0));
    return;
  }
  std::vector<char> reduced(static_cast<size_t>(r), axes.empty() ? 1 : 0);
  for (int64_t a : normalize_axes(c, axes, r)) reduced[static_cast<size_t>(a)] = 1;
  Shape y;
  for (int64_t k = 0; k < r; ++k) {
    if (!reduced[static_cast<size_t>(k)]) {
      y.push_back(c.shape(0)[static_cast<size_t>(k)]);
    } else if (keepdims) {
      y.push_back(1);
    }
  }
  c.set_output(0, DType::f32, y);
}

// --- Matrix products ---------------------------------------------------------------------------

void infer_gemm(InferContext& c) {
  check_input_dtypes(c, {{"A", kF32}, {"B", kF32}, {"C", kF32}});
  require_rank(c, 0, 2, "A");
  require_rank(c, 1, 2, "B");
  const bool ta = c.attrs().get_int("transA", 0) != 0, tb = c.attrs().get_int("transB", 0) != 0;
  const Shape &a = c.shape(0), &b = c.shape(1);
  int64_t M = ta ? a[1] : a[0], K = ta ? a[0] : a[1];
  int64_t Kb = tb ? b[1] : b[0], N = tb ? b[0] : b[1];
  c.require(K == Kb, "inner dimensions do not match: A " + shape_str(a) + (ta ? " (transposed)" : "") + ", B " +
                         shape_str(b) + (tb ? " (transposed)" : ""));
  if (c.has_input(2))
    c.require(broadcastable_to(c.shape(2), {M, N}),
              "C of shape " + shape_str(c.shape(2)) + " cannot be broadcast to " + shape_str({M, N}));
  check_act_range(c);
  c.set_output(0, DType::f32, {M, N});
}

void infer_matmul(InferContext& c) {
  check_input_dtypes(c, {{"A", kF32}, {"B", kF32}});
  Shape a = c.shape(0), b = c.shape(1);
  c.require(!a.empty() && !b.empty(), "MatMul operands must have rank >= 1 (got " + shape_str(a) + " and " +
                                          shape_str(b) + ")");
  // numpy.matmul: a 1-D operand is promoted to a matrix and the added axis is dropped again.
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  const int64_t M = a[a.size() - 2], K = a.back(), Kb = b[b.size() - 2], N = b.back();
  c.require(K == Kb, "inner dimensions do not match (" + shape_str(c.shape(0)) + " x " + shape_str(c.shape(1)) + ")");
  auto batch = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  c.require(batch.has_value(), "batch dimensions are not broadcast-compatible (" + shape_str(c.shape(0)) + " x " +
                                   shape_str(c.shape(1)) + ")");
  Shape y = *batch;
  if (!a_vec) y.push_back(M);
  if (!b_vec) y.push_back(N);
  c.set_output(0, DType::f32, y);
}

// --- Shape-preserving utilities ----------------------------------------------------------------

void infer_flatten(InferContext& c) {
  check_input_dtypes(c, {{"input", kAnyByte}});
  const int64_t r = c.rank(0);
  int64_t axis = c.attrs().get_int("axis", 1);
  c.require(axis >= -r && axis <= r, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  const Shape& s = c.shape(0);
  Shape y = {num_elements(Shape(s.begin(), s.begin() + axis)), num_elements(Shape(s.begin() + axis, s.end()))};
  c.set_output(0, c.dtype(0), y);
}

void infer_dropout(InferContext& c) {
  check_input_dtypes(c, {{"data", kF32}, {"ratio", kF32}, {"training_mode", kBool}});
  if (c.has_input(1)) require_scalar(c, 1, "ratio");
  if (c.has_input(2)) {
    const Tensor& t = require_constant(c, 2, "training_mode");
    c.require(t.numel() == 1 && read_int(t, 0) == 0, "training_mode=true is not supported (inference only)");
  }
  c.set_output(0, c.dtype(0), c.shape(0));
  c.set_output(1, DType::boolean, c.shape(0));
}

void infer_identity(InferContext& c) {
  check_input_dtypes(c, {{"input", kAnyByte}});
  c.set_output(0, c.dtype(0), c.shape(0));
}

// --- Resampling and padding --------------------------------------------------------------------

bool one_of(const std::string& s, std::initializer_list<const char*> options) {
  for (const char* o : options)
    if (s == o) return true;
  return false;
}

void infer_resize(InferContext& c) {
  check_input_dtypes(c, {{"X", kF32}, {"roi", kF32}, {"scales", kF32}, {"sizes", kI64}});
  const Attributes& a = c.attrs();
  const std::string mode = a.get_string("mode", "nearest");
  const std::string ctm = a.get_string("coordinate_transformation_mode", "half_pixel");
  const std::string nearest = a.get_string("nearest_mode", "round_prefer_floor");
  c.require(one_of(mode, {"nearest", "linear"}), "Resize mode '" + mode + "' is not supported (nearest, linear)");
  c.require(one_of(ctm, {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                         "tf_half_pixel_for_nearest"}),
            "coordinate_transformation_mode '" + ctm + "' is not supported");
  c.require(one_of(nearest, {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}),
            "nearest_mode '" + nearest + "' is not supported");
  c.require(a.get_int("antialias", 0) == 0, "antialias=1 is not supported");
  c.require(!a.has("axes"), "the axes attribute (opset 18) is not supported");
  c.require(a.get_string("keep_aspect_ratio_policy", "stretch") == "stretch",
            "keep_aspect_ratio_policy other than 'stretch' is not supported");

  const Shape& x = c.shape(0);
  const size_t r = x.size();
  // An empty tensor stands for an omitted input in ONNX.
  const bool has_scales = c.has_input(2) && num_elements(c.shape(2)) > 0;
  const bool has_sizes = c.has_input(3) && num_elements(c.shape(3)) > 0;
  c.require(has_scales != has_sizes, "exactly one of scales and sizes must be given");
  Shape y(r);
  if (has_sizes) {
    auto sizes = c.constant_ints(3, "sizes");
    c.require(sizes.size() == r, "sizes " + ints_str(sizes) + " must have one value per input dimension (" +
                                     std::to_string(r) + ")");
    for (size_t k = 0; k < r; ++k) {
      c.require(sizes[k] >= 1, "sizes " + ints_str(sizes) + " must be >= 1");
      y[k] = sizes[k];
    }
  } else {
    const Tensor& s = require_constant(c, 2, "scales");
    c.require(static_cast<size_t>(s.numel()) == r, "scales has " + std::to_string(s.numel()) +
                                                       " values, expected one per input dimension (" +
                                                       std::to_string(r) + ")");
    for (size_t k = 0; k < r; ++k) {
      float f = read_float(s, static_cast<int64_t>(k));
      c.require(f > 0, "scales must be positive, got " + std::to_string(f));
      // Bounded before the conversion: a scale of 1e25 (fuzz finding) made the double -> int64_t
      // cast undefined. No dimension above 2^46 can be a tensor lowbit holds (kMaxTensorBytes).
      const double d = std::floor(static_cast<double>(x[k]) * f);
      c.require(d <= static_cast<double>(kMaxTensorBytes),
                "scale " + std::to_string(f) + " makes dimension " + std::to_string(k) + " (" + std::to_string(x[k]) +
                    ") larger than any tensor lowbit holds");
      y[k] = static_cast<int64_t>(d);
      c.require(y[k] >= 1, "scale " + std::to_string(f) + " shrinks dimension " + std::to_string(k) + " (" +
                               std::to_string(x[k]) + ") to zero");
    }
  }
  if (mode == "linear") {
    c.require(r == 4, "linear Resize supports only 4-D NCHW input, got shape " + shape_str(x));
    c.require(y[0] == x[0] && y[1] == x[1], "linear Resize can only scale H and W (" + shape_str(x) + " -> " +
                                                shape_str(y) + ")");
  }
  c.set_output(0, DType::f32, y);
}

void infer_pad(InferContext& c) {
  check_input_dtypes(c, {{"data", kNumeric | kU8 | kI8}, {"pads", kIndex}, {"constant_value", kAnyByte},
                         {"axes", kIndex}});
  const std::string mode = c.attrs().get_string("mode", "constant");
  c.require(one_of(mode, {"constant", "reflect", "edge"}), "Pad mode '" + mode + "' is not supported");
  const Shape& x = c.shape(0);
  const int64_t r = static_cast<int64_t>(x.size());
  if (c.has_input(2)) {
    require_same_dtype(c, 0, 2);
    require_scalar(c, 2, "constant_value");
  }
  std::vector<int64_t> axes(static_cast<size_t>(r));
  for (int64_t k = 0; k < r; ++k) axes[static_cast<size_t>(k)] = k;
  if (c.has_input(3)) axes = normalize_axes(c, c.constant_ints(3, "axes"), r);
  auto pads = c.constant_ints(1, "pads");
  const size_t na = axes.size();
  c.require(pads.size() == 2 * na, "pads " + ints_str(pads) + " must have " + std::to_string(2 * na) +
                                       " values (begin and end for each padded axis)");
  Shape y = x;
  for (size_t k = 0; k < na; ++k) {
    size_t ax = static_cast<size_t>(axes[k]);
    int64_t b = pads[k], e = pads[k + na];
    if (mode == "reflect")
      c.require(b >= 0 && e >= 0 && b < x[ax] && e < x[ax],
                "reflect pads " + ints_str(pads) + " must be smaller than the padded dimension (" +
                    std::to_string(x[ax]) + ")");
    y[ax] = x[ax] + b + e;
    c.require(y[ax] >= 0, "pads " + ints_str(pads) + " make dimension " + std::to_string(ax) + " negative");
  }
  c.set_output(0, c.dtype(0), y);
}

OpSchema unary(const char* op, void (*infer)(InferContext&), QuantPassthrough qp = QuantPassthrough::no) {
  return {.op = op, .min_inputs = 1, .max_inputs = 1, .infer = infer, .quant_passthrough = qp};
}

const bool kRegistered = [] {
  SchemaRegistrar({.op = "Conv", .min_inputs = 2, .max_inputs = 4, .infer = infer_conv});
  SchemaRegistrar({.op = "ConvTranspose", .min_inputs = 2, .max_inputs = 3, .infer = infer_conv_transpose});
  SchemaRegistrar({.op = "BatchNormalization", .min_inputs = 5, .max_inputs = 5, .min_outputs = 1, .max_outputs = 5,
                   .infer = infer_batch_norm, .channel_map = true});
  // SiLU: lowbit's x * Sigmoid(x) (passes/fuse_activations.cc; exported as Sigmoid + Mul).
  // Element-wise maps: quantized, each is a table of 256 codes (QLut).
  // Those a float Conv applies as it stores its output (Relu and Clip fuse as its clamp instead).
  for (const char* op : {"Relu", "LeakyRelu", "Sigmoid", "SiLU", "HardSigmoid", "HardSwish", "Tanh", "Exp", "Sqrt"}) {
    OpSchema s = unary(op, infer_unary_f32);
    s.elementwise_map = true;
    const std::string_view o = op;
    s.conv_post_op = o == "LeakyRelu" || o == "Sigmoid" || o == "SiLU" || o == "HardSigmoid" || o == "HardSwish";
    SchemaRegistrar(std::move(s));
  }
  for (const char* op : {"Neg", "Abs", "Sign"}) SchemaRegistrar(unary(op, infer_unary_numeric));
  SchemaRegistrar({.op = "Clip", .min_inputs = 1, .max_inputs = 3, .infer = infer_clip, .elementwise_map = true});
  SchemaRegistrar(unary("Softmax", infer_softmax));
  SchemaRegistrar({.op = "MaxPool", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 2,
                   .infer = infer_pool, .quant_passthrough = QuantPassthrough::selects});
  SchemaRegistrar(unary("AveragePool", infer_pool, QuantPassthrough::averages));
  SchemaRegistrar(unary("GlobalAveragePool", infer_global_pool, QuantPassthrough::averages));
  SchemaRegistrar(unary("GlobalMaxPool", infer_global_pool));
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax"})
    SchemaRegistrar({.op = op, .min_inputs = 1, .max_inputs = 2, .infer = infer_reduce});
  SchemaRegistrar({.op = "Gemm", .min_inputs = 2, .max_inputs = 3, .infer = infer_gemm});
  SchemaRegistrar({.op = "MatMul", .min_inputs = 2, .max_inputs = 2, .infer = infer_matmul});
  SchemaRegistrar(unary("Flatten", infer_flatten, QuantPassthrough::moves));
  SchemaRegistrar({.op = "Dropout", .min_inputs = 1, .max_inputs = 3, .min_outputs = 1, .max_outputs = 2,
                   .infer = infer_dropout});
  SchemaRegistrar(unary("Identity", infer_identity));
  SchemaRegistrar({.op = "Resize", .min_inputs = 1, .max_inputs = 4, .infer = infer_resize});
  SchemaRegistrar({.op = "Pad", .min_inputs = 2, .max_inputs = 4, .infer = infer_pad});
  return true;
}();

}  // namespace
}  // namespace lowbit
