#include "lowbit/quant/quantize.h"

#include <cmath>

#include "lowbit/common/error.h"
#include "lowbit/io/synthetic.h"

namespace lowbit {

Tensor quantize_weights_per_channel(const Tensor& w, QuantParams& q) {
  const int64_t M = w.shape()[0], per = w.numel() / M;
  Tensor out(DType::i8, w.shape());
  q = QuantParams{};
  q.axis = 0;
  for (int64_t m = 0; m < M; ++m) {
    const float* src = w.data<float>() + m * per;
    float amax = 0;
    for (int64_t k = 0; k < per; ++k) amax = std::max(amax, std::fabs(src[k]));
    float scale = amax > 0 ? amax / 127.f : 1.f;
    for (int64_t k = 0; k < per; ++k)
      out.data<int8_t>()[m * per + k] =
          static_cast<int8_t>(std::clamp(std::nearbyint(src[k] / scale), -127.f, 127.f));
    q.scale.push_back(scale);
    q.zero_point.push_back(0);
  }
  return out;
}

namespace {

// Builds the quantized graph node by node, tracking for every fp32 value its f32 and u8 forms in
// the new graph and creating the missing one on demand (QuantizeLinear / DequantizeLinear).
class Rewriter {
 public:
  Rewriter(const Graph& f, const std::vector<Range>& ranges) : f_(f), ranges_(ranges) {
    f32_.assign(f.values.size(), kNoValue);
    u8_.assign(f.values.size(), kNoValue);
    q_.name = f.name;
  }

  Graph run(const std::set<std::string>& keep_fp32) {
    for (ValueId v : f_.inputs) {
      const Value& val = f_.value(v);
      f32_[static_cast<size_t>(v)] = q_.add_value(val.name, val.dtype, val.shape, val.shape_known);
      q_.inputs.push_back(f32_[static_cast<size_t>(v)]);
    }
    for (const Node& n : f_.nodes)
      if (keep_fp32.count(n.name) || !quantize(n)) copy_fp32(n);
    for (ValueId v : f_.outputs) q_.outputs.push_back(f32(v));
    return std::move(q_);
  }

 private:
  bool has_range(ValueId v) const { return ranges_[static_cast<size_t>(v)].seen; }
  bool is_u8(ValueId v) const { return u8_[static_cast<size_t>(v)] != kNoValue; }
  const Value& fv(ValueId v) const { return f_.value(v); }

  ValueId constant(float x) {
    Tensor t(DType::f32, {});
    t.data<float>()[0] = x;
    return q_.add_constant(q_.unique_name("scale"), t);
  }
  ValueId constant_u8(int32_t x) {
    Tensor t(DType::u8, {});
    t.data<uint8_t>()[0] = static_cast<uint8_t>(x);
    return q_.add_constant(q_.unique_name("zero_point"), t);
  }

  ValueId f32(ValueId v) {
    ValueId& slot = f32_[static_cast<size_t>(v)];
    if (slot != kNoValue) return slot;
    if (f_.is_constant(v)) return slot = q_.add_constant(fv(v).name, *f_.constant(v));
    if (!is_u8(v)) throw Error("quantizer: value '" + fv(v).name + "' used before it is defined");
    ValueId u = u8_[static_cast<size_t>(v)];
    const QuantParams qp = *q_.value(u).quant;  // a copy: add_value below may reallocate
    slot = q_.add_value(q_.unique_name(fv(v).name + ".dq"), DType::f32, fv(v).shape, true);
    q_.add_node("DequantizeLinear", q_.unique_name(fv(v).name + ".dequantize"),
                {u, constant(qp.scale[0]), constant_u8(qp.zero_point[0])}, {slot});
    return slot;
  }

  ValueId u8(ValueId v) {
    ValueId& slot = u8_[static_cast<size_t>(v)];
    if (slot != kNoValue) return slot;
    QuantParams qp = u8_params(ranges_[static_cast<size_t>(v)]);
    ValueId src = f32(v);
    slot = q_.add_value(q_.unique_name(fv(v).name + ".q"), DType::u8, fv(v).shape, true);
    q_.value(slot).quant = qp;
    q_.add_node("QuantizeLinear", q_.unique_name(fv(v).name + ".quantize"),
                {src, constant(qp.scale[0]), constant_u8(qp.zero_point[0])}, {slot});
    return slot;
  }

  // A u8 output carrying `qp`, named like the fp32 value so accuracy tools can pair them.
  ValueId new_u8(ValueId v, QuantParams qp) {
    ValueId id = q_.add_value(q_.unique_name(fv(v).name), DType::u8, fv(v).shape, true);
    q_.value(id).quant = std::move(qp);
    u8_[static_cast<size_t>(v)] = id;
    return id;
  }

  bool quantize(const Node& n) {
    if (n.inputs.empty() || n.outputs.empty()) return false;
    ValueId x = n.inputs[0], y = n.outputs[0];
    if (f_.is_constant(x) || fv(x).dtype != DType::f32) return false;
    if (n.op == "Conv") return quantize_conv(n, x, y);
    if (n.op == "Gemm") return quantize_gemm(n, x, y);
    if (n.op == "Add" && n.inputs.size() == 2) return quantize_add(n);
    // Ops that move or select u8 values keep the input's scale: no requantization needed.
    bool passthrough = n.op == "MaxPool" || n.op == "GlobalAveragePool" || n.op == "Flatten" ||
                       n.op == "Reshape" || n.op == "Squeeze" || n.op == "Unsqueeze";
    if (!passthrough || !is_u8(x) || n.outputs.size() != 1) return false;
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (n.inputs[i] != kNoValue && !f_.is_constant(n.inputs[i])) return false;
    std::vector<ValueId> in{u8_[static_cast<size_t>(x)]};
    for (size_t i = 1; i < n.inputs.size(); ++i) in.push_back(n.inputs[i] == kNoValue ? kNoValue : f32(n.inputs[i]));
    QuantParams qp = *q_.value(in[0]).quant;
    q_.add_node(n.op, n.name, in, {new_u8(y, qp)}, n.attrs);
    return true;
  }

  bool quantize_conv(const Node& n, ValueId x, ValueId y) {
    const Tensor* w = f_.constant(n.inputs[1]);
    ValueId b = Graph::input_or_none(n, 2), r = Graph::input_or_none(n, 3);
    if (!w || fv(x).shape.size() != 4 || !has_range(x) || !has_range(y)) return false;
    if (b != kNoValue && !f_.is_constant(b)) return false;
    if (r != kNoValue && !has_range(r)) return false;
    QuantParams wq;
    Tensor wt = quantize_weights_per_channel(*w, wq);
    ValueId wid = q_.add_constant(q_.unique_name(fv(n.inputs[1]).name + ".i8"), std::move(wt));
    q_.value(wid).quant = wq;
    std::vector<ValueId> in{u8(x), wid, b == kNoValue ? kNoValue : f32(b)};
    if (r != kNoValue) in.push_back(u8(r));
    q_.add_node("QConv", n.name, in, {new_u8(y, u8_params(ranges_[static_cast<size_t>(y)]))}, n.attrs);
    return true;
  }

  bool quantize_gemm(const Node& n, ValueId x, ValueId y) {
    const Tensor* w = f_.constant(n.inputs[1]);
    ValueId c = Graph::input_or_none(n, 2);
    const Attributes& a = n.attrs;
    if (!w || w->shape().size() != 2 || fv(x).shape.size() != 2 || !has_range(x)) return false;
    if (a.get_int("transA", 0) != 0 || a.get_float("alpha", 1.f) != 1.f || a.get_float("beta", 1.f) != 1.f)
      return false;
    const int64_t N = fv(y).shape[1];
    if (c != kNoValue && (!f_.is_constant(c) || f_.constant(c)->numel() != N)) return false;
    Tensor wnk = *w;
    if (a.get_int("transB", 0) == 0) {  // [K, N] -> [N, K]
      const int64_t K = w->shape()[0];
      wnk = Tensor(DType::f32, {N, K});
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j) wnk.data<float>()[j * K + k] = w->data<float>()[k * N + j];
    }
    QuantParams wq;
    Tensor wt = quantize_weights_per_channel(wnk, wq);
    ValueId wid = q_.add_constant(q_.unique_name(fv(n.inputs[1]).name + ".i8"), std::move(wt));
    q_.value(wid).quant = wq;
    ValueId bias = kNoValue;
    if (c != kNoValue) bias = q_.add_constant(q_.unique_name(fv(c).name), f_.constant(c)->reshaped({N}));
    Attributes attrs;
    attrs.set("transB", int64_t{1});
    for (const char* k : {"act_min", "act_max"})
      if (a.has(k)) attrs.set(k, a.get_float(k, 0.f));
    // A classifier feeding a graph output dequantizes in its own epilogue.
    bool to_output = false;
    for (ValueId o : f_.outputs) to_output |= o == y;
    ValueId out;
    if (to_output || !has_range(y)) {
      out = q_.add_value(q_.unique_name(fv(y).name), DType::f32, fv(y).shape, true);
      f32_[static_cast<size_t>(y)] = out;
    } else {
      out = new_u8(y, u8_params(ranges_[static_cast<size_t>(y)]));
    }
    q_.add_node("QGemm", n.name, {u8(x), wid, bias}, {out}, attrs);
    return true;
  }

  bool quantize_add(const Node& n) {
    ValueId a = n.inputs[0], b = n.inputs[1], y = n.outputs[0];
    if (f_.is_constant(a) || f_.is_constant(b) || fv(a).shape != fv(b).shape) return false;
    if (!has_range(a) || !has_range(b) || !has_range(y) || (!is_u8(a) && !is_u8(b))) return false;
    q_.add_node("QAdd", n.name, {u8(a), u8(b)}, {new_u8(y, u8_params(ranges_[static_cast<size_t>(y)]))}, n.attrs);
    return true;
  }

  void copy_fp32(const Node& n) {
    std::vector<ValueId> in, out;
    for (ValueId v : n.inputs) in.push_back(v == kNoValue ? kNoValue : f32(v));
    for (ValueId v : n.outputs) {
      if (v == kNoValue) {
        out.push_back(kNoValue);
        continue;
      }
      ValueId id = q_.add_value(q_.unique_name(fv(v).name), fv(v).dtype, fv(v).shape, true);
      f32_[static_cast<size_t>(v)] = id;
      out.push_back(id);
    }
    q_.add_node(n.op, n.name, in, out, n.attrs);
  }

  const Graph& f_;
  const std::vector<Range>& ranges_;
  Graph q_;
  std::vector<ValueId> f32_, u8_;
};

}  // namespace

Graph quantize_graph(const Graph& g, const std::vector<Range>& ranges, const std::set<std::string>& keep_fp32) {
  return Rewriter(g, ranges).run(keep_fp32);
}

std::vector<Range> calibrate_model(CompiledModel& fp32, const QuantizeOptions& opts) {
  if (opts.bits != 8)
    throw Error("--bits " + std::to_string(opts.bits) + ": only 8-bit quantization is implemented so far");
  if (!opts.samples.empty()) return calibrate(fp32, opts.samples, opts.method, opts.progress);
  std::vector<std::vector<Tensor>> synthetic;
  for (int i = 0; i < opts.synthetic_samples; ++i)
    synthetic.push_back(synthetic_inputs(fp32.graph(), opts.seed + static_cast<uint64_t>(i)));
  return calibrate(fp32, synthetic, opts.method, opts.progress);
}

Graph quantize_model(CompiledModel& fp32, const QuantizeOptions& opts) {
  return quantize_graph(fp32.graph(), calibrate_model(fp32, opts), opts.keep_fp32);
}

}  // namespace lowbit
