// Schemas of the quantized ops: lowbit's internal QConv / QGemm / QAdd (quantization parameters
// on the Values, see kernels/qu8-gemm/README.md) and ONNX's QuantizeLinear, DequantizeLinear,
// QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger.
#include <optional>

#include "lowbit/ir/codes.h"
#include "lowbit/ir/infer_helpers.h"
#include "lowbit/ir/op_params.h"
#include "lowbit/ir/channel_table.h"

namespace lowbit {
namespace {

// A value the quantized kernels read must say how its integers map to reals.
void require_quant(const InferContext& c, ValueId v, const char* what, int64_t channels) {
  const Value& val = c.graph().value(v);
  if (!val.quant) c.fail(std::string(what) + " '" + val.name + "' has no quantization parameters");
  const QuantParams& q = *val.quant;
  int64_t n = static_cast<int64_t>(q.scale.size());
  if (q.block_size > 0) {
    // Group-wise weights: a scale per block of input channels, output channel and tap.
    c.require(val.constant.has_value(), std::string(what) + " '" + val.name + "': group-wise scales are for weights");
    const WeightGroups g = weight_groups(val.shape, q.block_size);
    c.require(g.M == channels, std::string(what) + ": " + std::to_string(g.M) + " output channels, expected " +
                                   std::to_string(channels));
    c.require(n == g.count(), std::string(what) + " has " + std::to_string(n) + " scales; block size " +
                                  std::to_string(q.block_size) + " of " + shape_str(val.shape) + " needs " +
                                  std::to_string(g.count()));
  } else {
    c.require(n == 1 || n == channels,
              std::string(what) + " has " + std::to_string(n) + " scales; expected 1 or " + std::to_string(channels));
  }
  c.require(q.zero_point.size() == q.scale.size(), std::string(what) + ": scale and zero_point counts differ");
  for (float s : q.scale) c.require(s > 0.f, std::string(what) + " has a non-positive scale");
  // The scheme's codes must fit the storage: same signedness, no wider (u4 codes in u8 storage).
  const DTypeInfo& st = dtype_info(val.dtype);
  const DTypeInfo& di = dtype_info(code_dtype(val));
  c.require(!di.is_float && di.bits <= 8 && di.is_signed == st.is_signed && di.bits <= st.bits,
            std::string(what) + " '" + val.name + "': " + di.name + " codes cannot be stored as " + st.name);
  const CodeRange r = code_range(val);
  for (int32_t z : q.zero_point)
    c.require(z >= r.lo && z <= r.hi,
              std::string(what) + " zero point " + std::to_string(z) + " is outside " + di.name + "'s range");
}

void require_symmetric_weights(const InferContext& c, size_t i, int64_t channels) {
  require_quant(c, c.node().inputs[i], "weight", channels);
  for (int32_t z : c.graph().value(c.node().inputs[i]).quant->zero_point)
    c.require(z == 0, "weights must be symmetric (zero point 0), got " + std::to_string(z));
  c.require(c.constant(i) != nullptr, "weights must be constant");
  // Narrower codes in wider storage (logical mode) must stay in their range: kernels that repack
  // them to their code width rely on it.
  const Value& w = c.graph().value(c.node().inputs[i]);
  if (code_dtype(w) != w.dtype) {
    const CodeRange r = code_range(w);
    const Tensor& t = *c.constant(i);
    for (int64_t k = 0; k < t.numel(); ++k) {
      const int32_t v = load_code(t.raw(), t.dtype(), k);
      c.require(v >= r.lo && v <= r.hi && (code_dtype(w) != DType::b1 || v != 0), "weight '" + w.name + "' holds " + std::to_string(v) + " at element " +
                                            std::to_string(k) + ", outside its " + dtype_name(code_dtype(w)) + " codes");
    }
  }
}

void require_output_quant(const InferContext& c, DType out) {
  if (out == DType::f32) return;
  require_quant(c, c.node().outputs[0], "output", 1);
}

void infer_qconv(InferContext& c) {
  check_input_dtypes(c, {{"X", kU8}, {"W", kQWeights}, {"B", kF32}, {"residual", kU8}});
  Conv2dParams p = conv2d_params(c.graph(), c.node());
  require_quant(c, c.node().inputs[0], "input", 1);
  require_symmetric_weights(c, 1, p.M);
  if (c.has_input(3)) require_quant(c, c.node().inputs[3], "residual", 1);
  c.set_output(0, DType::u8, {p.N, p.M, p.OH, p.OW});
  require_output_quant(c, DType::u8);
}

// A b1 activation: packed signs, channels innermost in 64-bit words, so C % 64 == 0.
void require_packed_signs(const InferContext& c, size_t i) {
  const Shape& x = c.shape(i);
  c.require(x.size() == 4 && x[1] % kSignWordBits == 0,
            "packed signs (b1) need NCHW with C a multiple of 64, got " + shape_str(x));
}

// BinaryConv: a convolution whose input is binarised by sign (x < 0 is -1, else +1; for u8 input,
// code < zero point) and whose weights are b1 codes times a positive per-channel scale alpha:
//   y = alpha[m] * sum over taps of sign(x) * w  + B[m] (+ residual), clamped by act_min/act_max.
// Real-valued in and out: f32 (a model run in fp32) or u8 codes (a quantized one). Created by the
// binarize pass from Sign / BipolarQuant -> Conv (passes/binarize.cc); padded taps hold
// pad_value (0: ONNX's zero padding of the Sign output; +1 or -1: one-padding).
//
// Packed signs (b1 activations, ir/codes.h): X may be b1 (the signs of the real-valued tensor,
// already channel-packed), and with attribute out_signs = 1 the output is b1, the signs of y
// (a BatchNorm + Sign after a binary conv, as one threshold per channel): then no residual and no
// clamp (neither commutes with the sign).
void infer_binary_conv(InferContext& c) {
  check_input_dtypes(c, {{"X", kF32 | kU8 | dtype_bit(DType::b1)}, {"W", dtype_bit(DType::b1)}, {"B", kF32},
                         {"residual", kF32 | kU8}});
  Conv2dParams p = conv2d_params(c.graph(), c.node());
  c.require(p.group == 1, "group " + std::to_string(p.group) + ": binary convolution packs all input channels");
  require_symmetric_weights(c, 1, p.M);
  const int64_t pad = c.attrs().get_int("pad_value", 0);
  c.require(pad == 0 || pad == 1 || pad == -1, "pad_value " + std::to_string(pad) + " must be 0, 1 or -1");
  if (c.dtype(0) == DType::b1) require_packed_signs(c, 0);
  if (c.attrs().get_int("out_signs", 0)) {
    c.require(!c.has_input(3) && !c.attrs().has("act_min") && !c.attrs().has("act_max"),
              "out_signs: a residual or a clamp does not commute with the sign");
    c.require(p.M % kSignWordBits == 0, "out_signs: M = " + std::to_string(p.M) + " is not a multiple of 64");
    c.set_output(0, DType::b1, {p.N, p.M, p.OH, p.OW});
    return;
  }
  // From packed signs the real domain is the one the output already has (f32, or u8 once quantized).
  const DType x = c.dtype(0) != DType::b1 ? c.dtype(0)
                  : c.graph().value(c.node().outputs[0]).dtype == DType::u8 ? DType::u8 : DType::f32;
  if (c.dtype(0) == DType::u8) {
    require_quant(c, c.node().inputs[0], "input", 1);
    c.require(code_dtype(c.graph().value(c.node().inputs[0])) == DType::u8, "input codes must be u8");
  }
  if (c.has_input(3)) {
    c.require(c.dtype(3) == x, std::string("residual has dtype ") + dtype_name(c.dtype(3)) + ", the output " + dtype_name(x));
    c.require(c.shape(3) == Shape{p.N, p.M, p.OH, p.OW}, "residual shape " + shape_str(c.shape(3)) + " differs from the output's");
    if (x == DType::u8) require_quant(c, c.node().inputs[3], "residual", 1);
  }
  c.set_output(0, x, {p.N, p.M, p.OH, p.OW});
  require_output_quant(c, x);
}

// QONNX BipolarQuant (domain qonnx.custom_op.general, formerly finn.custom_op.general):
// y = (x >= 0 ? +1 : -1) * scale, scale broadcast to x (a scalar, or per channel).
void infer_bipolar_quant(InferContext& c) {
  check_input_dtypes(c, {{"X", kF32}, {"scale", kF32}});
  const Shape &x = c.shape(0), &s = c.shape(1);
  c.require(s.size() <= x.size(), "scale " + shape_str(s) + " has a higher rank than the input " + shape_str(x));
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t d = s[s.size() - 1 - i], xd = x[x.size() - 1 - i];
    c.require(d == 1 || d == xd, "scale " + shape_str(s) + " does not broadcast to the input " + shape_str(x));
  }
  c.set_output(0, DType::f32, x);
}

void infer_qgemm(InferContext& c) {
  check_input_dtypes(c, {{"A", kU8}, {"B", kQWeights}, {"C", kF32}});
  require_rank(c, 0, 2, "A [M, K]");
  require_rank(c, 1, 2, "B [N, K]");
  const Shape &a = c.shape(0), &w = c.shape(1);
  c.require(c.attrs().get_int("transB", 1) == 1 && c.attrs().get_int("transA", 0) == 0,
            "QGemm takes A [M, K] and B [N, K] (transA=0, transB=1)");
  c.require(a[1] == w[1], "A is " + shape_str(a) + " but B is " + shape_str(w) + ": K differs");
  require_quant(c, c.node().inputs[0], "input", 1);
  require_symmetric_weights(c, 1, w[0]);
  if (c.has_input(2)) c.require(num_elements(c.shape(2)) == w[0], "bias must have " + std::to_string(w[0]) + " values");
  // Output dtype is chosen by the quantizer (u8, or f32 for a dequantized classifier).
  DType out = c.graph().value(c.node().outputs[0]).dtype == DType::f32 ? DType::f32 : DType::u8;
  c.set_output(0, out, {a[0], w[0]});
  require_output_quant(c, out);
}

void infer_qadd(InferContext& c) {
  check_input_dtypes(c, {{"A", kU8}, {"B", kU8}});
  c.require(c.shape(0) == c.shape(1), "QAdd needs equal shapes, got " + shape_str(c.shape(0)) + " and " +
                                          shape_str(c.shape(1)));
  require_quant(c, c.node().inputs[0], "A", 1);
  require_quant(c, c.node().inputs[1], "B", 1);
  c.set_output(0, DType::u8, c.shape(0));
  require_output_quant(c, DType::u8);
}

// QMul: A u8 times B u8, B of A's shape or of A's leading dims then ones (a squeeze-excite scale
// per channel: [N, C, 1, 1] against [N, C, H, W]).
void infer_qmul(InferContext& c) {
  check_input_dtypes(c, {{"A", kU8}, {"B", kU8}});
  const Shape &a = c.shape(0), &b = c.shape(1);
  bool ok = a.size() == b.size();
  bool ones = false;  // past B's leading dims
  for (size_t i = 0; ok && i < a.size(); ++i) {
    if (b[i] != a[i]) ones = true;
    ok = ones ? b[i] == 1 : true;
  }
  c.require(ok, "QMul needs B of A's shape or of A's leading dims then ones, got " + shape_str(a) + " and " +
                    shape_str(b));
  require_quant(c, c.node().inputs[0], "A", 1);
  require_quant(c, c.node().inputs[1], "B", 1);
  c.set_output(0, DType::u8, a);
  require_output_quant(c, DType::u8);
}

// QLut: an element-wise map (attribute `op`, with that op's attributes and constant inputs after
// the table) on u8 codes, y = T[x]. The quantizer fills T with quantize(op(dequantize(code))).
// A per-channel map (BatchNormalization) has a table per channel, y[n, c, ...] = T_c[x[n, c, ...]],
// derived from the op's constants (ir/channel_table.h): input T is left empty.
void infer_qlut(InferContext& c) {
  check_input_dtypes(c, {{"X", kU8}, {"T", kU8}, {"op input 1", kF32}, {"op input 2", kF32},
                         {"op input 3", kF32}, {"op input 4", kF32}});
  const std::string op = c.attrs().get_string("op", "");
  // Identity: a requantization from X's parameters to Y's (a Concat's inputs brought to its own).
  c.require(elementwise_map(op) || channel_map(op) || op == "Identity",
            "attribute op '" + op +
                "' is not an element-wise map (Sigmoid, HardSwish, ..., or Identity) or a per-channel one (BatchNormalization)");
  if (!channel_map(op)) {
    const Tensor* t = c.constant(1);
    c.require(t && t->numel() == 256, "T must be a constant table of 256 u8 codes");
  }
  require_quant(c, c.node().inputs[0], "X", 1);
  c.set_output(0, DType::u8, c.shape(0));
  require_output_quant(c, DType::u8);
  if (channel_map(op)) {
    const std::string why = channel_table_unavailable(c.graph(), c.node());
    c.require(why.empty(), "per-channel map " + op + ": " + why);
  }
}

// ONNX per-tensor or per-axis scale/zero-point inputs: a scalar, or a 1-D tensor along `axis`.
void check_scale_zp(const InferContext& c, size_t scale_i, size_t zp_i, const Shape& x, int64_t axis) {
  const Shape& s = c.shape(scale_i);
  // Opset 21's blocked form: block_size > 0, a scale per block of `block_size` along axis, the scale
  // tensor x's shape with that axis ceil-divided (group-wise weights, QuantParams::block_size).
  const int64_t block = c.attrs().get_int("block_size", 0);
  c.require(block >= 0, "block_size " + std::to_string(block) + " is negative");
  if (block > 0) {
    const int64_t ax = normalize_axis(c, axis, static_cast<int64_t>(x.size()));
    c.require(s.size() == x.size(), "blocked scale must have the input's rank " + std::to_string(x.size()) + ", got " +
                                        shape_str(s));
    for (size_t d = 0; d < x.size(); ++d) {
      const int64_t want = static_cast<int64_t>(d) == ax ? (x[d] + block - 1) / block : x[d];
      c.require(s[d] == want, "blocked scale " + shape_str(s) + " does not fit input " + shape_str(x) + " with block_size " +
                                  std::to_string(block) + " along axis " + std::to_string(ax));
    }
    if (c.has_input(zp_i))
      c.require(c.shape(zp_i) == s, "zero point shape " + shape_str(c.shape(zp_i)) + " differs from scale shape " +
                                        shape_str(s));
    return;
  }
  int64_t n = num_elements(s);
  if (n != 1) {
    c.require(s.size() == 1, "per-axis scale must be 1-D, got " + shape_str(s));
    int64_t ax = normalize_axis(c, axis, static_cast<int64_t>(x.size()));
    c.require(n == x[static_cast<size_t>(ax)], "scale has " + std::to_string(n) + " values; axis " +
                                                   std::to_string(ax) + " has " + std::to_string(x[static_cast<size_t>(ax)]));
  }
  if (c.has_input(zp_i))
    c.require(c.shape(zp_i) == s, "zero point shape " + shape_str(c.shape(zp_i)) + " differs from scale shape " +
                                      shape_str(s));
}

// The ONNX integer element types QuantizeLinear writes and DequantizeLinear reads: 8-bit, INT4 /
// UINT4 (opset 21) and INT2 / UINT2 (opset 25), the last four packed as lowbit stores them.
constexpr DTypeSet kQdqInts = kU8 | kI8 | dtype_bit(DType::i4) | dtype_bit(DType::u4) | dtype_bit(DType::i2) |
                              dtype_bit(DType::u2);

// TensorProto.DataType numbers of output_dtype (opset 21) for those types.
std::optional<DType> qdq_output_dtype(int64_t od) {
  switch (od) {
    case 2: return DType::u8;
    case 3: return DType::i8;
    case 21: return DType::u4;
    case 22: return DType::i4;
    case 25: return DType::u2;
    case 26: return DType::i2;
    default: return std::nullopt;
  }
}

void infer_quantize_linear(InferContext& c) {
  check_input_dtypes(c, {{"x", kF32 | kI32}, {"y_scale", kF32}, {"y_zero_point", kQdqInts}});
  check_scale_zp(c, 1, 2, c.shape(0), c.attrs().get_int("axis", 1));
  // Opset 23's precision (the intermediate type of x / scale) other than x's own is not lowbit's.
  c.require(c.attrs().get_int("precision", 0) == 0,
            "precision " + std::to_string(c.attrs().get_int("precision", 0)) +
                ": lowbit divides in float, the precision of its f32 input");
  // Opset 21's output_dtype (an ONNX TensorProto type) must agree with the zero point.
  const int64_t od = c.attrs().get_int("output_dtype", 0);
  const std::optional<DType> odt = od ? qdq_output_dtype(od) : std::optional<DType>(DType::u8);
  c.require(odt.has_value(), "output_dtype " + std::to_string(od) +
                                 " is not supported (lowbit quantizes to UINT8, INT8, UINT4, INT4, UINT2, INT2)");
  const DType out = c.has_input(2) ? c.dtype(2) : *odt;
  c.require(od == 0 || out == *odt, "output_dtype " + std::to_string(od) + " disagrees with the zero point's " +
                                        dtype_name(out));
  c.set_output(0, out, c.shape(0));
}

void infer_dequantize_linear(InferContext& c) {
  // INT4 / UINT4 (opset 21) and INT2 / UINT2 (opset 25), packed: sub-byte QDQ weights and activations.
  check_input_dtypes(c, {{"x", kQdqInts | kI32}, {"x_scale", kF32}, {"x_zero_point", kQdqInts | kI32}});
  if (c.has_input(2)) require_same_dtype(c, 0, 2);
  check_scale_zp(c, 1, 2, c.shape(0), c.attrs().get_int("axis", 1));
  c.set_output(0, DType::f32, c.shape(0));
}

// QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B.
void infer_qlinear_conv(InferContext& c) {
  check_input_dtypes(c, {{"x", kU8 | kI8}, {"x_scale", kF32}, {"x_zero_point", kU8 | kI8}, {"w", kU8 | kI8},
                         {"w_scale", kF32}, {"w_zero_point", kU8 | kI8}, {"y_scale", kF32},
                         {"y_zero_point", kU8 | kI8}, {"B", kI32}});
  require_scalar(c, 1, "x_scale");
  require_scalar(c, 6, "y_scale");
  const Shape &x = c.shape(0), &w = c.shape(3);
  require_rank(c, 0, 4, "x (only 2-D convolution is supported)");
  require_rank(c, 3, 4, "w [M, C/group, KH, KW]");
  int64_t group = c.attrs().get_int("group", 1);
  c.require(group >= 1 && x[1] % group == 0 && w[0] % group == 0 && w[1] * group == x[1],
            "weight " + shape_str(w) + " does not fit input " + shape_str(x) + " with group " + std::to_string(group));
  std::vector<int64_t> ks = c.attrs().get_ints("kernel_shape", {w[2], w[3]});
  auto strides = c.attrs().get_ints("strides", {1, 1});
  auto dil = c.attrs().get_ints("dilations", {1, 1});
  auto pads = c.attrs().get_ints("pads", {0, 0, 0, 0});
  std::string ap = c.attrs().get_string("auto_pad", "NOTSET");
  c.require(strides.size() == 2 && dil.size() == 2 && pads.size() == 4, "strides/dilations/pads must be 2-D");
  AxisGeometry h = resolve_axis(ap, x[2], ks[0], strides[0], dil[0], pads[0], pads[2], false);
  AxisGeometry ww = resolve_axis(ap, x[3], ks[1], strides[1], dil[1], pads[1], pads[3], false);
  c.require(h.out >= 1 && ww.out >= 1, "output would be empty");
  c.set_output(0, c.dtype(7), {x[0], w[0], h.out, ww.out});
}

Shape matmul_shape(const InferContext& c, size_t ai, size_t bi) {
  Shape a = c.shape(ai), b = c.shape(bi);
  c.require(!a.empty() && !b.empty(), "MatMul operands must have rank >= 1");
  bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  c.require(a.back() == b[b.size() - 2], "inner dimensions differ: " + shape_str(c.shape(ai)) + " x " +
                                             shape_str(c.shape(bi)));
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  auto batch = broadcast_shapes(ab, bb);
  c.require(batch.has_value(), "batch dimensions do not broadcast");
  Shape out = *batch;
  if (!a1) out.push_back(a[a.size() - 2]);
  if (!b1) out.push_back(b.back());
  return out;
}

void infer_qlinear_matmul(InferContext& c) {
  check_input_dtypes(c, {{"a", kU8 | kI8}, {"a_scale", kF32}, {"a_zero_point", kU8 | kI8}, {"b", kU8 | kI8},
                         {"b_scale", kF32}, {"b_zero_point", kU8 | kI8}, {"y_scale", kF32},
                         {"y_zero_point", kU8 | kI8}});
  c.set_output(0, c.dtype(7), matmul_shape(c, 0, 3));
}

void infer_conv_integer(InferContext& c) {
  check_input_dtypes(c, {{"x", kU8 | kI8}, {"w", kU8 | kI8}, {"x_zero_point", kU8 | kI8}, {"w_zero_point", kU8 | kI8}});
  const Shape &x = c.shape(0), &w = c.shape(1);
  require_rank(c, 0, 4, "x (only 2-D convolution is supported)");
  require_rank(c, 1, 4, "w [M, C/group, KH, KW]");
  int64_t group = c.attrs().get_int("group", 1);
  c.require(group >= 1 && w[1] * group == x[1], "weight " + shape_str(w) + " does not fit input " + shape_str(x));
  std::vector<int64_t> ks = c.attrs().get_ints("kernel_shape", {w[2], w[3]});
  auto strides = c.attrs().get_ints("strides", {1, 1});
  auto dil = c.attrs().get_ints("dilations", {1, 1});
  auto pads = c.attrs().get_ints("pads", {0, 0, 0, 0});
  std::string ap = c.attrs().get_string("auto_pad", "NOTSET");
  AxisGeometry h = resolve_axis(ap, x[2], ks[0], strides[0], dil[0], pads[0], pads[2], false);
  AxisGeometry ww = resolve_axis(ap, x[3], ks[1], strides[1], dil[1], pads[1], pads[3], false);
  c.set_output(0, DType::i32, {x[0], w[0], h.out, ww.out});
}

void infer_matmul_integer(InferContext& c) {
  check_input_dtypes(c, {{"A", kU8 | kI8}, {"B", kU8 | kI8}, {"a_zero_point", kU8 | kI8}, {"b_zero_point", kU8 | kI8}});
  c.set_output(0, DType::i32, matmul_shape(c, 0, 1));
}

const bool kRegistered = [] {
  SchemaRegistrar({.op = "QConv", .min_inputs = 2, .max_inputs = 4, .infer = infer_qconv, .lowbit_quantized = true,
                   .signatures = "X u8 (codes u8|u4|u2|u1), W i8|i4|i2|b1 (i4/i2/b1 packed, or codes in i8), B f32, "
                                 "residual u8 -> Y u8 (codes u8|u4|u2|u1)"});
  SchemaRegistrar({.op = "BinaryConv", .min_inputs = 2, .max_inputs = 4, .infer = infer_binary_conv,
                   .signatures = "X f32|u8 (binarised by sign)|b1 (packed signs), W b1 (scale alpha per channel), "
                                 "B f32, residual f32|u8 -> Y f32|u8 (as X) | b1 (out_signs)"});
  SchemaRegistrar({.op = "BipolarQuant", .min_inputs = 2, .max_inputs = 2, .infer = infer_bipolar_quant,
                   .signatures = "X f32, scale f32 -> Y f32 (+-scale)"});
  SchemaRegistrar({.op = "QGemm", .min_inputs = 2, .max_inputs = 3, .infer = infer_qgemm, .lowbit_quantized = true,
                   .signatures = "A u8 (codes u8|u4|u2|u1), B i8|i4|i2|b1, C f32 -> Y u8 (codes u8|u4|u2|u1) | f32"});
  SchemaRegistrar({.op = "QAdd", .min_inputs = 2, .max_inputs = 2, .infer = infer_qadd, .lowbit_quantized = true,
                   .signatures = "A u8, B u8 (codes u8|u4|u2|u1) -> Y u8 (codes u8|u4|u2|u1)"});
  SchemaRegistrar({.op = "QMul", .min_inputs = 2, .max_inputs = 2, .infer = infer_qmul, .lowbit_quantized = true,
                   .signatures = "A u8, B u8 (A's shape, or its leading dims then ones) -> Y u8"});
  SchemaRegistrar({.op = "QLut", .min_inputs = 1, .max_inputs = 6, .infer = infer_qlut, .lowbit_quantized = true,
                   .signatures = "X u8 (codes u8|u4|u2), T u8 [256] (constant; none for a per-channel map, whose "
                                 "tables come from its constants), the op's constants f32 -> Y u8"});
  SchemaRegistrar({.op = "QuantizeLinear", .min_inputs = 2, .max_inputs = 3, .infer = infer_quantize_linear,
                   .signatures = "X f32|i32, scale f32, zero point u8|i8|u4|i4|u2|i2 -> Y of the zero point's type "
                                 "(codes u8|u4|u2 in u8 for lowbit's own activations)"});
  SchemaRegistrar({.op = "DequantizeLinear", .min_inputs = 2, .max_inputs = 3, .infer = infer_dequantize_linear,
                   .signatures = "X u8|i8|i32|u4|i4|u2|i2, scale f32, zero point -> Y f32"});
  SchemaRegistrar({.op = "QLinearConv", .min_inputs = 8, .max_inputs = 9, .infer = infer_qlinear_conv});
  SchemaRegistrar({.op = "QLinearMatMul", .min_inputs = 8, .max_inputs = 8, .infer = infer_qlinear_matmul});
  SchemaRegistrar({.op = "ConvInteger", .min_inputs = 2, .max_inputs = 4, .infer = infer_conv_integer});
  SchemaRegistrar({.op = "MatMulInteger", .min_inputs = 2, .max_inputs = 4, .infer = infer_matmul_integer});
  return true;
}();

}  // namespace
}  // namespace lowbit
