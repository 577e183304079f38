#include "lowbit/frontend/onnx/onnx_export_qdq.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "lowbit/common/error.h"
#include "lowbit/frontend/onnx/onnx_write.h"
#include "lowbit/dispatch/registry.h"
#include "lowbit/frontend/onnx/onnx_export.h"
#include "lowbit/ir/codes.h"
#include "lowbit/ir/op_params.h"
#include "lowbit/ir/op_schema.h"

namespace lowbit {
namespace {

using TP = onnx::TensorProto;

// Ops ONNX Runtime runs on the codes between a DQ and a Q without requantizing: pure data movement
// and selection (its int8 average pools are not exact against lowbit's rounding: those export as
// DQ -> fp32 op -> Q).
bool is_u8_pass_through(const std::string& op) {
  const QuantPassthrough p = quant_passthrough(op);
  return p == QuantPassthrough::moves || p == QuantPassthrough::selects;
}

class QdqExporter {
 public:
  QdqExporter(const Graph& g, const QdqExportOptions& o) : g_(g), o_(o) {}

  std::string run() {
    onnx::ModelProto model;
    model.set_ir_version(7);
    model.set_producer_name("lowbit");
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    // Sub-byte weights are written as INT4 (2-bit codes too: they fit, and ONNX Runtime's CPU
    // DequantizeLinear has INT4 but no INT2), which needs opset 21; the other ops used here mean
    // the same at 13 and 21.
    // With exact_subbyte_types every code keeps its own type: INT2 weights, UINT4 / UINT2
    // activations, which need opset 25 (IR 13).
    bool int4 = false, exact = false;
    for (const Value& v : g_.values) {  // b1 weights of BinaryConv are written as +-alpha floats
      const bool sub = v.quant && bit_width(code_dtype(v)) < 8 && code_dtype(v) != DType::b1;
      int4 |= (sub || (v.quant && v.quant->block_size > 0)) && v.constant;  // (blocked DQ: opset 21 too)
      exact |= sub && o_.exact_subbyte_types;
    }
    opset->set_version(exact ? kExportOnnxOpsetInt2 : int4 ? kExportOnnxOpsetInt4 : kExportOnnxOpset);
    if (int4) model.set_ir_version(10);  // IR 10 introduced the 4-bit types
    if (exact) model.set_ir_version(13);  // IR 13 the 2-bit ones
    gp_ = model.mutable_graph();
    gp_->set_name(g_.name.empty() ? "lowbit" : g_.name);
    for (const Value& v : g_.values) used_.insert(v.name);
    for (ValueId id : g_.inputs) value_info(gp_->add_input(), id);
    for (ValueId id : g_.outputs) value_info(gp_->add_output(), id);
    for (const Node& n : g_.nodes) emit(n);
    std::string bytes;
    if (!model.SerializeToString(&bytes)) throw Error("failed to serialise the ONNX model (over 2 GiB?)");
    return bytes;
  }

 private:
  // ---- names, initializers, value infos ----

  std::string fresh(const std::string& base) {
    std::string n = base;
    for (int i = 1; !used_.insert(n).second; ++i) n = base + "_" + std::to_string(i);
    return n;
  }

  void value_info(onnx::ValueInfoProto* vi, ValueId id) { fill_onnx_value_info(vi, g_.value(id)); }

  std::string initializer(const std::string& base, const Tensor& t) {
    std::string name = fresh(base);
    fill_onnx_tensor(gp_->add_initializer(), t, name, "initializer '" + base + "'");
    return name;
  }
  template <class T>
  std::string vec_init(const std::string& base, DType dt, const std::vector<T>& v, bool scalar) {
    Tensor t(dt, scalar ? Shape{} : Shape{static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) {
      switch (dt) {
        case DType::f32: t.data<float>()[i] = static_cast<float>(v[i]); break;
        case DType::u8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v[i]); break;
        case DType::i8: t.data<int8_t>()[i] = static_cast<int8_t>(v[i]); break;
        case DType::i32: t.data<int32_t>()[i] = static_cast<int32_t>(v[i]); break;
        case DType::i64: t.data<int64_t>()[i] = static_cast<int64_t>(v[i]); break;
        case DType::i4: case DType::u4: case DType::i2: case DType::u2:
          store_code(t.raw(), dt, static_cast<int64_t>(i), static_cast<int32_t>(v[i]));
          break;
        default: throw Error("internal: vec_init dtype");
      }
    }
    return initializer(base, t);
  }

  // The ONNX name of value v (constants become initializers the first time they are used).
  std::string name(ValueId v) {
    if (v == kNoValue) return "";
    const Value& val = g_.value(v);
    if (!val.constant) return val.name;
    auto it = const_names_.find(v);
    if (it != const_names_.end()) return it->second;
    used_.erase(val.name);  // reserved above for the constant itself
    return const_names_[v] = initializer(val.name, *val.constant);
  }

  onnx::NodeProto* node(const std::string& op, const std::string& base, const std::vector<std::string>& in,
                        const std::vector<std::string>& out) {
    auto* p = gp_->add_node();
    p->set_name(fresh(base));
    p->set_op_type(op);
    for (auto& s : in) p->add_input(s);
    for (auto& s : out) p->add_output(s);
    return p;
  }

  static void attr_int(onnx::NodeProto* p, const std::string& k, int64_t v) {
    auto* a = p->add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void copy_attr(onnx::NodeProto* p, const Node& n, const std::string& k, const AttrValue& v) {
    fill_onnx_attribute(p->add_attribute(), k, v, n);
  }
  // ONNX attributes of n, without lowbit-internal ones (fused clamp, pinned kernel, notes).
  // False for lowbit-internal attributes (fused clamp, QDQ notes, pinned kernel) and for those
  // opset 13 lacks.
  static bool exported_attr(const Node& n, const std::string& k) {
    return !(k == "act_min" || k == "act_max" || k == "post_op" || k == "post_alpha" || k == "post_beta" ||
             k == "post_scale" || k == "post_shift" ||
             k == "qdq_unfused" || k == kPinnedKernelAttr ||
             k == kPrepackedAttr || k == kPrepackedKeyAttr) &&
           opset13_attribute(n, k);
  }
  static void copy_attrs(onnx::NodeProto* p, const Node& n) {
    for (const auto& [k, v] : n.attrs.all())
      if (exported_attr(n, k)) copy_attr(p, n, k, v);
  }

  // ---- quantization helpers ----

  static const QuantParams& quant(const Graph& g, const Node& n, ValueId v) {
    const Value& val = g.value(v);
    if (!val.quant || val.quant->scale.empty())
      throw Error("node " + n.label() + ": value '" + val.name + "' has no quantization parameters");
    return *val.quant;
  }

  // The ONNX type of an activation's codes: UINT8, or its own UINT4 / UINT2 under exact_subbyte_types.
  DType act_type(const QuantParams& q) const {
    const DType code = q.code.value_or(DType::u8);
    return o_.exact_subbyte_types && (code == DType::u4 || code == DType::u2) ? code : DType::u8;
  }

  std::pair<std::string, std::string> scale_zp(const QuantParams& q, DType dt) {
    auto key = std::make_pair(q.scale[0], q.zero_point[0] + 1000 * static_cast<int>(dt));
    auto it = sz_cache_.find(key);
    if (it != sz_cache_.end()) return it->second;
    auto r = std::make_pair(vec_init("scale", DType::f32, std::vector<float>{q.scale[0]}, true),
                            vec_init("zero_point", dt, std::vector<int32_t>{q.zero_point[0]}, true));
    return sz_cache_[key] = r;
  }

  // A fresh DequantizeLinear per use: ORT's QDQ selectors want one consumer per DQ.
  std::string dq(ValueId v, const Node& n) {
    const Value& val = g_.value(v);
    if (val.dtype != DType::u8) return name(v);
    const QuantParams& q = quant(g_, n, v);
    auto [s, z] = scale_zp(q, act_type(q));
    std::string out = fresh(val.name + "_dq");
    node("DequantizeLinear", val.name + "_dequantize", {name(v), s, z}, {out});
    return out;
  }
  // QuantizeLinear to u8; codes narrower than u8 (u4 / u2 activations) are then clamped to their
  // range with a Clip on the u8 codes: QCDQ, the standard-ONNX spelling of n-bit codes in 8-bit
  // storage (Brevitas writes the same), which every runtime runs as it is.
  std::string q(const std::string& src, const QuantParams& qp, const std::string& out, const std::string& base) {
    auto [s, z] = scale_zp(qp, act_type(qp));
    const DType code = qp.code.value_or(DType::u8);
    if (code == DType::u8 || act_type(qp) == code) {  // UINT8, or (exact types) UINT4 / UINT2 itself
      node("QuantizeLinear", base, {src, s, z}, {out});
      return out;
    }
    const std::string wide = fresh(out + "_u8");
    node("QuantizeLinear", base, {src, s, z}, {wide});
    const std::string lo = vec_init("code_min", DType::u8, std::vector<int32_t>{0}, true);
    const std::string hi =
        vec_init(std::string(dtype_name(code)) + "_max", DType::u8, std::vector<int32_t>{int32_t(dtype_info(code).qmax)}, true);
    node("Clip", base + "_codes", {wide, lo, hi}, {out});
    return out;
  }

  // i8 weights (per output channel along axis 0) -> DequantizeLinear; 4- and 2-bit codes (packed or
  // logical) as an INT4 initializer with an INT4 zero point.
  std::string dq_weights(const Node& n, ValueId w) {
    const Value& wv = g_.value(w);
    const bool sub = bit_width(code_dtype(wv)) < 8;
    const bool storage_ok = wv.dtype == DType::i8 || wv.dtype == DType::i4 || wv.dtype == DType::i2;
    if (code_dtype(wv) == DType::b1)
      throw Error("node " + n.label() + ": b1 (w1a1) weights have no ONNX QDQ form (no ONNX type holds +-1 codes; "
                  "binarised models are exported as Sign + Conv by their training frameworks)");
    if (!wv.constant || !storage_ok) throw Error("node " + n.label() + ": weights must be constant i8, i4 or i2");
    // Sub-byte codes as INT4, or (exact types) as INT4 / INT2 by their width.
    const DType wt = !sub ? DType::i8 : o_.exact_subbyte_types && code_dtype(wv) == DType::i2 ? DType::i2 : DType::i4;
    const QuantParams& qw = quant(g_, n, w);
    if (qw.block_size > 0) {
      // Group-wise: a blocked DequantizeLinear (opset 21) along axis 1, scales (and zero zero
      // points) in x's shape with that axis ceil-divided: lowbit's own layout.
      const WeightGroups wg = weight_groups(wv.shape, qw.block_size);
      Shape ss = wv.shape;
      ss[1] = wg.blocks;
      Tensor st(DType::f32, ss), zt(sub ? wt : DType::i8, ss);
      std::memcpy(st.raw(), qw.scale.data(), qw.scale.size() * sizeof(float));
      std::memset(zt.raw(), 0, static_cast<size_t>(zt.nbytes()));
      const std::string data = sub ? initializer(wv.name, convert_codes(*wv.constant, wt)) : name(w);
      const std::string s = initializer(wv.name + "_scale", st), z = initializer(wv.name + "_zero_point", zt);
      std::string out = fresh(wv.name + "_dq");
      auto* p = node("DequantizeLinear", wv.name + "_dequantize", {data, s, z}, {out});
      attr_int(p, "axis", 1);
      attr_int(p, "block_size", qw.block_size);
      return out;
    }
    const bool per_channel = qw.scale.size() > 1;
    std::string data = sub ? initializer(wv.name, convert_codes(*wv.constant, wt)) : name(w);
    std::string s = vec_init(wv.name + "_scale", DType::f32, qw.scale, !per_channel);
    std::string z = vec_init(wv.name + "_zero_point", wt, qw.zero_point, !per_channel);
    std::string out = fresh(wv.name + "_dq");
    auto* p = node("DequantizeLinear", wv.name + "_dequantize", {data, s, z}, {out});
    if (per_channel) attr_int(p, "axis", 0);
    return out;
  }

  // f32 bias -> i32 in units of s_x * s_w[m] (float product, as ONNX Runtime's quantizer does),
  // dequantized: QDQ fusion into QLinearConv needs the bias in that form.
  std::string dq_bias(const Node& n, ValueId b, const QuantParams& qx, const QuantParams& qw) {
    if (b == kNoValue) return "";
    if (qw.block_size > 0) return name(b);  // group-wise weights have no per-channel unit: the f32 bias
    const Tensor* t = g_.constant(b);
    if (!t || t->dtype() != DType::f32) throw Error("node " + n.label() + ": bias must be a constant f32");
    const int64_t M = t->numel();
    std::vector<float> scale(static_cast<size_t>(M));
    std::vector<int32_t> q(static_cast<size_t>(M));
    for (int64_t m = 0; m < M; ++m) {
      const float sw = qw.scale[qw.scale.size() == 1 ? 0 : static_cast<size_t>(m)];
      const float s = qx.scale[0] * sw;
      const double v = std::nearbyint(double(t->data<float>()[m]) / s);
      scale[size_t(m)] = s;
      q[size_t(m)] = static_cast<int32_t>(std::clamp(v, -2147483647.0, 2147483647.0));
    }
    const std::string base = g_.value(b).name;
    std::string data = vec_init(base + "_i32", DType::i32, q, false);
    std::string s = vec_init(base + "_scale", DType::f32, scale, false);
    std::string out = fresh(base + "_dq");
    auto* p = node("DequantizeLinear", base + "_dequantize", {data, s}, {out});
    attr_int(p, "axis", 0);
    return out;
  }

  // The unsigned code range of activation parameters (u8: [0, 255]; u4: [0, 15]; u2: [0, 3]).
  static CodeRange act_range(const QuantParams& q) {
    return {0, static_cast<int32_t>(dtype_info(q.code.value_or(DType::u8)).qmax)};
  }

  // The clamp [lo, hi] that lowbit applies for act_min / act_max on an output (s, z) of `range`.
  static std::pair<int32_t, int32_t> qclamp(float act_min, float act_max, float s, int32_t z, CodeRange range) {
    auto bound = [&](float a, int32_t absent) {
      if (!std::isfinite(a)) return absent;
      float r = std::min(std::max(std::nearbyintf(a / s), -1e6f), 1e6f);
      return std::clamp(static_cast<int32_t>(r) + z, range.lo, range.hi);
    };
    return {bound(act_min, range.lo), bound(act_max, range.hi)};
  }

  // Relu / Clip for act_min / act_max; left out where the output's QuantizeLinear clamps the same.
  std::string activation(const Node& n, const std::string& src, const QuantParams* qy) {
    const float lo = n.attrs.get_float("act_min", -INFINITY), hi = n.attrs.get_float("act_max", INFINITY);
    if (!std::isfinite(lo) && !std::isfinite(hi)) return src;
    if (qy) {
      const CodeRange r = act_range(*qy);
      auto [ql, qh] = qclamp(lo, hi, qy->scale[0], qy->zero_point[0], r);
      if (ql == r.lo && qh == r.hi) return src;
    }
    std::string out = fresh(n.name + "_act");
    if (lo == 0.f && !std::isfinite(hi)) {
      node("Relu", n.name + "_relu", {src}, {out});
    } else {
      std::string mn = std::isfinite(lo) ? vec_init(n.name + "_min", DType::f32, std::vector<float>{lo}, true) : "";
      std::string mx = std::isfinite(hi) ? vec_init(n.name + "_max", DType::f32, std::vector<float>{hi}, true) : "";
      node("Clip", n.name + "_clip", {src, mn, mx}, {out});
    }
    return out;
  }

  // ---- per op ----

  void emit(const Node& n) {
    if (n.op == "QConv") return emit_qconv(n);
    if (n.op == "BinaryConv") return emit_binary_conv(n);
    if (n.op == "QGemm") return emit_qgemm(n);
    if (n.op == "QAdd") return emit_qadd(n);
    if (n.op == "QLut") return emit_qlut(n);
    if (n.op == "QMul") return emit_qmul(n);
    const bool u8_in = !n.inputs.empty() && n.inputs[0] != kNoValue && g_.value(n.inputs[0]).dtype == DType::u8;
    // Averaging ops as DQ -> the fp32 op -> Q (ONNX Runtime's int8 averages round otherwise); so
    // are the ops that move or select codes when those are UINT4 / UINT2 (ONNX's MaxPool takes
    // neither; on pure data movement DQ -> op -> Q gives the same codes).
    const bool narrow_in = u8_in && g_.value(n.inputs[0]).quant && act_type(*g_.value(n.inputs[0]).quant) != DType::u8;
    if (u8_in && (quant_passthrough(n.op) == QuantPassthrough::averages || (narrow_in && is_u8_pass_through(n.op)))) {
      std::string x = dq(n.inputs[0], n);
      std::string t = fresh(n.name + "_f32");
      copy_attrs(node(n.op, n.name, {x}, {t}), n);
      q(t, quant(g_, n, n.outputs[0]), name(n.outputs[0]), n.name + "_quantize");
      return;
    }
    // lowbit's own QuantizeLinear / DequantizeLinear of narrower codes: in their ONNX types when
    // exact_subbyte_types asks for them (and through q()'s Clip otherwise).
    if (n.op == "QuantizeLinear" && g_.value(n.outputs[0]).quant) {
      q(name(n.inputs[0]), quant(g_, n, n.outputs[0]), name(n.outputs[0]), n.name);
      return;
    }
    if (n.op == "DequantizeLinear" && u8_in && g_.value(n.inputs[0]).quant &&
        act_type(*g_.value(n.inputs[0]).quant) != DType::u8) {
      const std::string x = dq(n.inputs[0], n);
      node("Identity", n.name, {x}, {name(n.outputs[0])});
      return;
    }
    // A Concat of codes: its inputs carry the output's parameters (the quantizer made them so), so
    // the codes concatenate as they are; narrower codes go through fp32 as above.
    if (n.op == "Concat" && u8_in) {
      std::vector<std::string> in;
      for (ValueId v : n.inputs) in.push_back(narrow_in ? dq(v, n) : name(v));
      const std::string out = narrow_in ? fresh(n.name + "_f32") : name(n.outputs[0]);
      copy_attrs(node("Concat", n.name, in, {out}), n);
      if (narrow_in) q(out, quant(g_, n, n.outputs[0]), name(n.outputs[0]), n.name + "_quantize");
      return;
    }
    if (u8_in && !is_u8_pass_through(n.op) && n.op != "DequantizeLinear")
      throw Error("node " + n.label() + " reads u8 data and has no QDQ export");
    emit_float(n);
  }

  // A table of codes as the op it was made from, between DQ and Q (the op's constants follow the
  // table on the node). ORT fuses what it has int8 kernels for and runs the rest in fp32.
  void emit_qlut(const Node& n) {
    const std::string op = n.attrs.get_string("op", "");
    const std::string x = dq(n.inputs[0], n);
    std::string t = fresh(n.name + "_f32");
    if (op == "SiLU" || op == "HardSwish") {
      emit_gated(op, n.name, x, t);
    } else {
      std::vector<std::string> in{x};
      for (size_t i = 2; i < n.inputs.size(); ++i) in.push_back(name(n.inputs[i]));
      onnx::NodeProto* p = node(op, n.name, in, {t});
      for (const auto& [k, v] : n.attrs.all())
        if (k != "op" && exported_attr(n, k)) copy_attr(p, n, k, v);
      t = activation(n, t, &quant(g_, n, n.outputs[0]));  // a BatchNormalization's fused Relu / Clip
    }
    // The scale and shift the table took in after the op (quantize.cc's absorb_affine).
    if (n.attrs.has("post_scale")) {
      const std::string s = fresh(n.name + "_scaled");
      node("Mul", n.name + "_post_scale",
           {t, vec_init(n.name + "_post_scale", DType::f32, std::vector<float>{n.attrs.get_float("post_scale", 1.0f)}, true)},
           {s});
      t = s;
    }
    if (n.attrs.has("post_shift")) {
      const std::string s = fresh(n.name + "_shifted");
      node("Add", n.name + "_post_shift",
           {t, vec_init(n.name + "_post_shift", DType::f32, std::vector<float>{n.attrs.get_float("post_shift", 0.0f)}, true)},
           {s});
      t = s;
    }
    q(t, quant(g_, n, n.outputs[0]), name(n.outputs[0]), n.name + "_quantize");
  }

  // x * gate(x) in opset-13 ops: SiLU (lowbit's fused x * Sigmoid(x); ONNX has no SiLU before
  // opset 24) and HardSwish (opset 14) = x * HardSigmoid(x, alpha 1/6, beta 0.5).
  void emit_gated(const std::string& op, const std::string& base, const std::string& x, const std::string& out) {
    const std::string s = fresh(base + "_gate");
    onnx::NodeProto* p = node(op == "SiLU" ? "Sigmoid" : "HardSigmoid", base + "_gate", {x}, {s});
    if (op == "HardSwish") {
      copy_attr(p, Node{}, "alpha", AttrValue(1.0f / 6.0f));
      copy_attr(p, Node{}, "beta", AttrValue(0.5f));
    }
    node("Mul", base, {x, s}, {out});
  }

  // fp32 nodes (and Q / DQ / u8 moves) as they are, with lowbit's fused epilogues spelled out.
  void emit_float(const Node& n) {
    if (n.op == "SiLU" || n.op == "HardSwish") {
      emit_gated(n.op, n.name, name(n.inputs[0]), g_.value(n.outputs[0]).name);
      return;
    }
    const bool conv_residual = n.op == "Conv" && Graph::input_or_none(n, 3) != kNoValue;
    const bool act = n.attrs.has("act_min") || n.attrs.has("act_max");
    const std::string post = n.op == "Conv" ? n.attrs.get_string("post_op", "") : "";
    const bool affine = n.op == "Conv" && (n.attrs.has("post_scale") || n.attrs.has("post_shift"));
    if (n.op == "Softmax" && n.attrs.get_int("coerce_2d", 0) != 0)
      throw Error("node " + n.label() + ": coerce_2d (opset < 13 Softmax) has no opset-13 form");
    std::vector<std::string> in;
    const size_t n_in = conv_residual ? 3 : n.inputs.size();
    for (size_t i = 0; i < n_in; ++i) in.push_back(name(n.inputs[i]));
    while (!in.empty() && in.back().empty()) in.pop_back();
    std::vector<std::string> out;
    for (ValueId o : n.outputs) out.push_back(o == kNoValue ? "" : g_.value(o).name);
    const std::string final_out = out.empty() ? "" : out[0];
    if (conv_residual || act || !post.empty() || affine) out[0] = fresh(n.name + "_pre");
    auto* p = node(n.op, n.name, in, out);
    copy_attrs(p, n);
    std::string cur = out.empty() ? "" : out[0];
    if (conv_residual) {
      std::string s = fresh(n.name + "_sum");
      node("Add", n.name + "_add", {cur, name(n.inputs[3])}, {s});
      cur = s;
    }
    if (conv_residual || act) cur = activation(n, cur, nullptr);
    if (!post.empty()) {
      // The fused post-op (passes/fuse_epilogues.cc) as the node it came from.
      const std::string to = affine ? fresh(n.name + "_" + post) : final_out;
      if (post == "SiLU" || post == "HardSwish") {
        emit_gated(post, n.name + "_" + post, cur, to);
      } else {
        onnx::NodeProto* a = node(post, n.name + "_" + post, {cur}, {to});
        if (post == "LeakyRelu" || post == "HardSigmoid")
          copy_attr(a, n, "alpha", AttrValue(n.attrs.get_float("post_alpha", post == "LeakyRelu" ? 0.01f : 0.2f)));
        if (post == "HardSigmoid") copy_attr(a, n, "beta", AttrValue(n.attrs.get_float("post_beta", 0.5f)));
      }
      cur = to;
    }
    if (affine) {
      // post_scale / post_shift: the Mul and Add they were.
      const std::string scaled = fresh(n.name + "_scaled");
      node("Mul", n.name + "_post_scale",
           {cur, vec_init(n.name + "_post_scale", DType::f32, std::vector<float>{n.attrs.get_float("post_scale", 1.0f)}, true)},
           {scaled});
      node("Add", n.name + "_post_shift",
           {scaled, vec_init(n.name + "_post_shift", DType::f32, std::vector<float>{n.attrs.get_float("post_shift", 0.0f)}, true)},
           {final_out});
    } else if (post.empty() && (conv_residual || act)) {
      node("Identity", n.name + "_out", {cur}, {final_out});
    }
  }

  void emit_qconv(const Node& n) {
    const QuantParams& qx = quant(g_, n, n.inputs[0]);
    const QuantParams& qw = quant(g_, n, n.inputs[1]);
    const QuantParams& qy = quant(g_, n, n.outputs[0]);
    std::vector<std::string> in{dq(n.inputs[0], n), dq_weights(n, n.inputs[1])};
    if (ValueId b = Graph::input_or_none(n, 2); b != kNoValue) in.push_back(dq_bias(n, b, qx, qw));
    std::string c = fresh(n.name + "_conv");
    auto* p = node("Conv", n.name, in, {c});
    for (const char* k : {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad"})
      if (n.attrs.has(k)) copy_attr(p, n, k, n.attrs.all().at(k));
    if (ValueId r = Graph::input_or_none(n, 3); r != kNoValue) {
      // QDQ has no fused residual: quantize the convolution over [Ymin - Rmax, Ymax - Rmin] (the
      // only part of its range that can reach the clamped output), then a quantized Add.
      const QuantParams& qr = quant(g_, n, r);
      auto [lo, hi] = qclamp(n.attrs.get_float("act_min", -INFINITY), n.attrs.get_float("act_max", INFINITY),
                             qy.scale[0], qy.zero_point[0], act_range(qy));
      const double ymin = double(qy.scale[0]) * (lo - qy.zero_point[0]),
                   ymax = double(qy.scale[0]) * (hi - qy.zero_point[0]);
      const double rmin = double(qr.scale[0]) * (0 - qr.zero_point[0]),
                   rmax = double(qr.scale[0]) * (act_range(qr).hi - qr.zero_point[0]);
      const double L = std::min(ymin - rmax, 0.0), U = std::max(ymax - rmin, 0.0);
      QuantParams qc;
      qc.scale = {static_cast<float>(U > L ? (U - L) / 255.0 : 1.0)};
      qc.zero_point = {std::clamp(static_cast<int32_t>(std::nearbyint(-L / qc.scale[0])), 0, 255)};
      std::string cq = q(c, qc, fresh(n.name + "_conv_q"), n.name + "_conv_quantize");
      auto [s, z] = scale_zp(qc, DType::u8);
      std::string cdq = fresh(n.name + "_conv_dq");
      node("DequantizeLinear", n.name + "_conv_dequantize", {cq, s, z}, {cdq});
      std::string sum = fresh(n.name + "_sum");
      node("Add", n.name + "_add", {cdq, dq(r, n)}, {sum});
      c = sum;
    }
    q(activation(n, c, &qy), qy, name(n.outputs[0]), n.name + "_quantize");
  }

  // BinaryConv in standard ops: the sign as lowbit takes it, Where(x < 0, -1, +1) (ONNX's Sign
  // maps 0 to 0, and u8 codes equal to the zero point are real 0, which would then count as 0),
  // a Pad for one-padding, the b1 weights as +-alpha floats, the conv in f32, then residual, clamp
  // and QuantizeLinear as for QConv. Every product is +-alpha, so ONNX Runtime's fp32 conv gives
  // the integer result to float rounding.
  void emit_binary_conv(const Node& n) {
    const Value &xv = g_.value(n.inputs[0]), &yv = g_.value(n.outputs[0]);
    if (xv.dtype == DType::b1 || yv.dtype == DType::b1)
      throw Error("node " + n.label() + ": packed signs (b1 activations between binary layers) have no ONNX "
                  "form; export the model before compiling it (export-onnx of the source .onnx or zoo model)");
    const Conv2dParams p = conv2d_params(g_, n);
    const std::string x = dq(n.inputs[0], n);
    const std::string lt = fresh(n.name + "_negative"), sg = fresh(n.name + "_sign");
    node("Less", n.name + "_less", {x, vec_init(n.name + "_zero", DType::f32, std::vector<float>{0.0f}, true)}, {lt});
    node("Where", n.name + "_where",
         {lt, vec_init(n.name + "_minus_one", DType::f32, std::vector<float>{-1.0f}, true),
          vec_init(n.name + "_plus_one", DType::f32, std::vector<float>{1.0f}, true)},
         {sg});
    std::string src = sg;
    const int64_t pad_value = n.attrs.get_int("pad_value", 0);
    if (pad_value != 0) {
      const std::string padded = fresh(n.name + "_padded");
      node("Pad", n.name + "_pad",
           {sg, vec_init(n.name + "_pads", DType::i64,
                         std::vector<int64_t>{0, 0, p.pad_top, p.pad_left, 0, 0, p.pad_bottom, p.pad_right}, false),
            vec_init(n.name + "_pad_value", DType::f32, std::vector<float>{static_cast<float>(pad_value)}, true)},
           {padded});
      src = padded;
    }
    const Value& wv = g_.value(n.inputs[1]);
    const QuantParams& qw = quant(g_, n, n.inputs[1]);
    Tensor w(DType::f32, wv.shape);
    const int64_t per = w.numel() / p.M;
    for (int64_t i = 0; i < w.numel(); ++i)
      w.data<float>()[i] = qw.scale[qw.scale.size() == 1 ? 0 : static_cast<size_t>(i / per)] *
                           static_cast<float>(load_code(wv.constant->raw(), DType::b1, i));
    std::vector<std::string> in{src, initializer(wv.name + "_f32", w)};
    if (ValueId b = Graph::input_or_none(n, 2); b != kNoValue) in.push_back(name(b));
    std::string c = fresh(n.name + "_conv");
    auto* cp = node("Conv", n.name, in, {c});
    for (const char* k : {"kernel_shape", "strides", "dilations", "group"})
      if (n.attrs.has(k)) copy_attr(cp, n, k, n.attrs.all().at(k));
    const int64_t pads[] = {p.pad_top, p.pad_left, p.pad_bottom, p.pad_right};
    auto* pa = cp->add_attribute();
    pa->set_name("pads");
    pa->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : pads) pa->add_ints(pad_value != 0 ? 0 : v);
    if (ValueId r = Graph::input_or_none(n, 3); r != kNoValue) {
      std::string sum = fresh(n.name + "_sum");
      node("Add", n.name + "_add", {c, dq(r, n)}, {sum});
      c = sum;
    }
    if (yv.dtype == DType::u8) {
      const QuantParams& qy = quant(g_, n, n.outputs[0]);
      q(activation(n, c, &qy), qy, name(n.outputs[0]), n.name + "_quantize");
    } else {
      node("Identity", n.name + "_out", {activation(n, c, nullptr)}, {name(n.outputs[0])});
    }
  }

  void emit_qgemm(const Node& n) {
    const QuantParams& qx = quant(g_, n, n.inputs[0]);
    const QuantParams& qw = quant(g_, n, n.inputs[1]);
    std::vector<std::string> in{dq(n.inputs[0], n), dq_weights(n, n.inputs[1])};
    if (ValueId b = Graph::input_or_none(n, 2); b != kNoValue) in.push_back(dq_bias(n, b, qx, qw));
    const bool u8_out = g_.value(n.outputs[0]).dtype == DType::u8;
    const QuantParams* qy = u8_out ? &quant(g_, n, n.outputs[0]) : nullptr;
    std::string c = fresh(n.name + "_gemm");
    auto* p = node("Gemm", n.name, in, {c});
    attr_int(p, "transB", 1);
    std::string a = activation(n, c, qy);
    if (u8_out) q(a, *qy, name(n.outputs[0]), n.name + "_quantize");
    else node("Identity", n.name + "_out", {a}, {name(n.outputs[0])});
  }

  void emit_qadd(const Node& n) {
    const QuantParams& qy = quant(g_, n, n.outputs[0]);
    std::string s = fresh(n.name + "_sum");
    node("Add", n.name, {dq(n.inputs[0], n), dq(n.inputs[1], n)}, {s});
    q(activation(n, s, &qy), qy, name(n.outputs[0]), n.name + "_quantize");
  }

  void emit_qmul(const Node& n) {  // as QAdd: DQ x DQ -> Mul (-> the fused clamp) -> Q
    const QuantParams& qy = quant(g_, n, n.outputs[0]);
    std::string s = fresh(n.name + "_product");
    node("Mul", n.name, {dq(n.inputs[0], n), dq(n.inputs[1], n)}, {s});
    q(activation(n, s, &qy), qy, name(n.outputs[0]), n.name + "_quantize");
  }

  const Graph& g_;
  QdqExportOptions o_;
  onnx::GraphProto* gp_ = nullptr;
  std::set<std::string> used_;
  std::map<ValueId, std::string> const_names_;
  std::map<std::pair<float, int32_t>, std::pair<std::string, std::string>> sz_cache_;
};

}  // namespace

std::string export_onnx_qdq_bytes(const Graph& g, const QdqExportOptions& o) { return QdqExporter(g, o).run(); }

void export_onnx_qdq(const Graph& g, const std::string& path, const QdqExportOptions& o) {
  std::string bytes = export_onnx_qdq_bytes(g, o);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error("cannot open '" + path + "' for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw Error("failed writing '" + path + "'");
}

}  // namespace lowbit
