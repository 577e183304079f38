// QDQ / QOperator ONNX -> lowbit's quantized ops. Every rewrite here is exact with respect to the
// graph as imported, up to float rounding of the requantization (at most one u8 step):
//   1. i8 activations become u8 with zero point + 128 (q_u8 = q_i8 + 128 for every value),
//   2. DequantizeLinear sinks below Flatten / Reshape / Squeeze / Unsqueeze (pure data movement
//      commutes with a per-tensor affine map), and Q(DQ(q)) with identical parameters is q,
//   3. DQ -> Conv / Gemm / MatMul / Add [-> Relu / Clip] -> Q, QLinearConv and QLinearMatMul
//      become QConv / QGemm / QAdd.
// What cannot be converted exactly stays as imported, with the reason in attribute `qdq_unfused`.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include "lowbit/common/log.h"
#include "lowbit/common/settings.h"
#include "lowbit/ir/codes.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/passes/passes.h"
#include "lowbit/passes/qdq.h"

namespace lowbit {
namespace {

bool is_qdq_op(const std::string& op) {
  return op == "QuantizeLinear" || op == "DequantizeLinear" || op == "QLinearConv" || op == "QLinearMatMul";
}

struct Fail {
  std::string why;
};

// Quantization of a tensor read from Q/DQ-style scale / zero-point inputs.
struct Params {
  std::vector<float> scale;
  std::vector<int32_t> zp;
  int64_t axis = -1;  // -1: per tensor
  DType dtype = DType::u8;
  int64_t block = 0;  // opset 21's block_size: blocked along axis (scale shape: x's, axis ceil-divided)
};

bool same_params(const QuantParams& a, const QuantParams& b) {
  return a.scale == b.scale && a.zero_point == b.zero_point;
}

class QdqFuser {
 public:
  QdqFuser(Graph& g, QdqStats& st) : g_(g), st_(st) {}

  void run() {
    probe_ = g_;
    validate_and_fold_constants(probe_);  // shapes, dtypes and the values of constant subgraphs
    for (size_t v = 0; v < g_.values.size() && v < probe_.values.size(); ++v) {
      Value& val = g_.values[v];
      const Value& p = probe_.values[v];
      if (val.constant) continue;
      val.dtype = p.dtype;
      val.shape = p.shape;
      val.shape_known = p.shape_known;
    }
    fold_code_clips();
    flip_i8_activations();
    sink_dequantize();
    remove_requantize();
    fuse();
    g_.topo_sort();
    g_.remove_dead();
  }

 private:
  // ---- graph queries ----

  const Tensor* cst(ValueId v) const {
    if (v == kNoValue) return nullptr;
    if (g_.is_constant(v)) return g_.constant(v);
    if (static_cast<size_t>(v) < probe_.values.size()) return probe_.constant(v);
    return nullptr;
  }
  bool is_output(ValueId v) const {
    for (ValueId o : g_.outputs)
      if (o == v) return true;
    return false;
  }
  void refresh() {
    producer_ = g_.producers();
    consumers_ = g_.consumers();
  }
  const Node* producer(ValueId v) const {
    if (v == kNoValue || static_cast<size_t>(v) >= producer_.size()) return nullptr;
    NodeId p = producer_[static_cast<size_t>(v)];
    return p < 0 || erased(p) ? nullptr : &g_.nodes[static_cast<size_t>(p)];
  }
  bool erased(NodeId i) const { return static_cast<size_t>(i) < erase_.size() && erase_[static_cast<size_t>(i)]; }
  std::vector<NodeId> users(ValueId v) const {
    std::vector<NodeId> r;
    if (static_cast<size_t>(v) < consumers_.size())
      for (NodeId c : consumers_[static_cast<size_t>(v)])
        if (!erased(c)) r.push_back(c);
    return r;
  }
  // The only consumer of v (v not a graph output), or nullptr.
  Node* sole_user(ValueId v) {
    auto u = users(v);
    if (u.size() != 1 || is_output(v)) return nullptr;
    return &g_.nodes[static_cast<size_t>(u[0])];
  }
  NodeId index_of(const Node* n) const { return static_cast<NodeId>(n - g_.nodes.data()); }

  ValueId int_const(DType t, const Shape& shape, const std::vector<int32_t>& v, const std::string& base) {
    Tensor x(t, shape);
    for (size_t i = 0; i < v.size(); ++i) {
      if (t == DType::u8) x.data<uint8_t>()[i] = static_cast<uint8_t>(v[i]);
      else x.data<int8_t>()[i] = static_cast<int8_t>(v[i]);
    }
    return g_.add_constant(g_.unique_name(base), std::move(x));
  }

  // Scale / zero point inputs of a Q/DQ/QLinear node for a tensor of `rank` along `axis_attr`.
  Params params(const Node& n, size_t scale_i, size_t zp_i, int64_t rank, int64_t axis_attr, DType data_dtype) const {
    Params p;
    const Tensor* s = cst(Graph::input_or_none(n, scale_i));
    if (!s || s->dtype() != DType::f32) throw Fail{"scale of " + n.label() + " is not a constant f32"};
    ValueId zv = Graph::input_or_none(n, zp_i);
    const Tensor* z = cst(zv);
    if (zv != kNoValue && !z) throw Fail{"zero point of " + n.label() + " is not constant"};
    for (int64_t i = 0; i < s->numel(); ++i) p.scale.push_back(s->data<float>()[i]);
    for (int64_t i = 0; i < s->numel(); ++i) p.zp.push_back(z ? static_cast<int32_t>(read_int(*z, z->numel() == 1 ? 0 : i)) : 0);
    p.dtype = z ? z->dtype() : data_dtype;
    p.block = n.attrs.get_int("block_size", 0);
    if (s->numel() != 1 || p.block > 0) p.axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
    for (float x : p.scale)
      if (!(x > 0.f) || !std::isfinite(x)) throw Fail{"scale of " + n.label() + " is not positive and finite"};
    return p;
  }
  Params node_params(const Node& n, size_t scale_i, size_t zp_i, ValueId data) const {
    const Value& d = g_.value(data);
    return params(n, scale_i, zp_i, static_cast<int64_t>(d.shape.size()), n.attrs.get_int("axis", 1), d.dtype);
  }

  static QuantParams per_tensor(const Params& p) {
    QuantParams q;
    q.scale = {p.scale[0]};
    q.zero_point = {p.zp[0]};
    return q;
  }
  // The same for activation v, with the narrower codes it had before its storage became u8.
  QuantParams act_quant(const Params& p, ValueId v) const {
    QuantParams q = per_tensor(p);
    if (auto it = codes_.find(v); it != codes_.end()) q.code = it->second;
    return q;
  }

  // ---- 1. i8 activations -> u8 ----

  // Zero-point input index of each quantized-activation input / output of the ops that read them.
  static int zp_input_for(const Node& n, size_t input) {
    if (n.op == "DequantizeLinear" && input == 0) return 2;
    if (n.op == "QLinearConv" && input == 0) return 2;
    if (n.op == "QLinearMatMul" && (input == 0 || input == 3)) return static_cast<int>(input) + 2;
    return -1;
  }
  static int zp_output_for(const Node& n) {
    if (n.op == "QuantizeLinear") return 2;
    if (n.op == "QLinearConv" || n.op == "QLinearMatMul") return 7;
    return -1;
  }

  // QuantizeLinear to u8 -> Clip(0, 2^b - 1) on the codes: a b-bit activation in 8-bit storage
  // (QCDQ, as Brevitas and lowbit's own default export write 4- and 2-bit activations). The Clip
  // goes and the QuantizeLinear writes its output directly, with u4 / u2 codes that it clamps to:
  // the same codes.
  void fold_code_clips() {
    refresh();
    std::vector<char> drop(g_.nodes.size(), 0);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      Node& clip = g_.nodes[i];
      if (clip.op != "Clip" || clip.inputs.size() < 3) continue;
      const Node* qc = producer(clip.inputs[0]);
      if (!qc || qc->op != "QuantizeLinear" || g_.value(qc->outputs[0]).dtype != DType::u8) continue;
      if (is_output(qc->outputs[0]) || users(qc->outputs[0]).size() != 1) continue;
      const Tensor *lo = cst(clip.inputs[1]), *hi = cst(clip.inputs[2]);
      if (!lo || !hi || lo->dtype() != DType::u8 || hi->dtype() != DType::u8 || lo->numel() != 1 || hi->numel() != 1)
        continue;
      const int64_t l = read_int(*lo, 0), h = read_int(*hi, 0);
      const DType code = h == 15 ? DType::u4 : h == 3 ? DType::u2 : DType::u8;
      if (l != 0 || code == DType::u8) continue;
      Node& q = g_.nodes[static_cast<size_t>(index_of(qc))];
      const ValueId y = clip.outputs[0];
      q.outputs[0] = y;
      drop[i] = 1;
      codes_[y] = code;
      try {
        const Params p = node_params(q, 1, 2, q.inputs[0]);
        if (p.scale.size() == 1) g_.value(y).quant = act_quant(p, y);
      } catch (const Fail&) {
      }
      ++st_.rewrites;
    }
    std::vector<Node> kept;
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (!drop[i]) kept.push_back(std::move(g_.nodes[i]));
    g_.nodes = std::move(kept);
  }

  // Activations quantized to i8, or to 4- / 2-bit codes (INT4 / UINT4 / INT2 / UINT2, opset 21 /
  // 25), become u8 storage: signed codes shift by 2^(b - 1) with their zero points (as i8 -> u8 by
  // 128), and the narrower ones keep their width as the value's code dtype (u4 / u2 in u8), which
  // lowbit's kernels clamp to.
  void flip_i8_activations() {
    refresh();
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const int zo = zp_output_for(g_.nodes[i]);
      if (zo < 0) continue;
      ValueId y = g_.nodes[i].outputs[0];
      const DType from = g_.value(y).dtype;
      if (from == DType::u8 || !is_code_dtype(from) || from == DType::b1 || from == DType::u1 || is_output(y)) continue;
      const int bits = bit_width(from);
      const int32_t shift = dtype_info(from).is_signed ? 1 << (bits - 1) : 0;
      const DType code = bits == 4 ? DType::u4 : bits == 2 ? DType::u2 : DType::u8;
      // Every reader must take the zero point as a constant scalar we can shift by 128.
      std::vector<std::pair<NodeId, int>> zps{{static_cast<NodeId>(i), zo}};
      bool ok = true;
      for (NodeId c : users(y)) {
        const Node& u = g_.nodes[static_cast<size_t>(c)];
        for (size_t k = 0; k < u.inputs.size(); ++k) {
          if (u.inputs[k] != y) continue;
          int zi = zp_input_for(u, k);
          if (zi < 0) ok = false;
          else if (std::find(zps.begin(), zps.end(), std::pair<NodeId, int>{c, zi}) == zps.end()) zps.push_back({c, zi});
        }
      }
      for (auto [n, zi] : zps) {
        const Tensor* z = cst(Graph::input_or_none(g_.nodes[static_cast<size_t>(n)], static_cast<size_t>(zi)));
        if (!z || z->numel() != 1 || z->dtype() != from) ok = false;
      }
      if (!ok) continue;
      for (auto [n, zi] : zps) {
        Node& u = g_.nodes[static_cast<size_t>(n)];
        const int32_t z = static_cast<int32_t>(read_int(*cst(u.inputs[static_cast<size_t>(zi)]), 0)) + shift;
        u.inputs[static_cast<size_t>(zi)] = int_const(DType::u8, {}, {z}, u.name + "_zero_point_u8");
      }
      g_.value(y).dtype = DType::u8;
      if (code != DType::u8) {
        codes_[y] = code;
        // A QuantizeLinear left in the graph (one no fusion absorbs) clamps to the value's codes.
        const Node& qn = g_.nodes[i];
        try {
          if (qn.op == "QuantizeLinear") {
            const Params p = node_params(qn, 1, 2, qn.inputs[0]);
            if (p.scale.size() == 1) g_.value(y).quant = act_quant(p, y);
          }
        } catch (const Fail&) {
        }
      }
      ++st_.rewrites;
    }
  }

  // ---- 2. DQ sinking and Q(DQ(q)) removal ----

  // Per-tensor DequantizeLinear of a non-constant u8 value: its params, else nullopt.
  std::optional<Params> u8_dq(const Node* d) const {
    if (!d || d->op != "DequantizeLinear" || g_.is_constant(d->inputs[0]) || cst(d->inputs[0])) return std::nullopt;
    if (g_.value(d->inputs[0]).dtype != DType::u8) return std::nullopt;
    try {
      Params p = node_params(*d, 1, 2, d->inputs[0]);
      if (p.scale.size() != 1) return std::nullopt;
      return p;
    } catch (const Fail&) {
      return std::nullopt;
    }
  }

  void sink_dequantize() {
    for (bool changed = true; changed;) {
      changed = false;
      refresh();
      std::vector<Node> added;
      for (size_t i = 0; i < g_.nodes.size(); ++i) {
        Node& n = g_.nodes[i];
        // Only pure data movement: u8 MaxPool / GlobalAveragePool have no SIMD kernel (the guard
        // keeps them fp32 in lowbit's own quantized graphs), so they stay between DQ and Q.
        bool movable = quant_passthrough(n.op) == QuantPassthrough::moves;
        if (!movable || n.outputs.size() != 1 || n.inputs.empty()) continue;
        const Node* d = producer(n.inputs[0]);
        auto p = u8_dq(d);
        if (!p) continue;
        ValueId y = n.outputs[0];
        ValueId q = d->inputs[0];
        const std::string base = g_.value(y).name;
        ValueId yq = g_.add_value(g_.unique_name(base + "_q"), DType::u8, g_.value(y).shape, g_.value(y).shape_known);
        g_.value(yq).quant = act_quant(*p, q);
        if (auto it = codes_.find(q); it != codes_.end()) codes_[yq] = it->second;
        std::vector<ValueId> dq_in = d->inputs;
        dq_in[0] = yq;
        n.inputs[0] = q;
        n.outputs[0] = yq;
        added.push_back(Node{g_.unique_name(n.name + "_dequantize"), "DequantizeLinear", dq_in, {y}, {}});
        ++st_.rewrites;
        changed = true;
      }
      for (auto& a : added) g_.nodes.push_back(std::move(a));
      g_.topo_sort();
    }
  }

  void remove_requantize() {
    refresh();
    std::vector<ValueId> replace(g_.values.size(), kNoValue);
    std::vector<char> drop(g_.nodes.size(), 0);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& qn = g_.nodes[i];
      if (qn.op != "QuantizeLinear" || is_output(qn.outputs[0])) continue;
      const Node* d = producer(qn.inputs[0]);
      auto p = u8_dq(d);
      if (!p || g_.value(qn.outputs[0]).dtype != DType::u8) continue;
      try {
        Params pq = node_params(qn, 1, 2, qn.inputs[0]);
        if (pq.scale != p->scale || pq.zp != p->zp) continue;
      } catch (const Fail&) {
        continue;
      }
      replace[static_cast<size_t>(qn.outputs[0])] = d->inputs[0];
      drop[i] = 1;
      ++st_.rewrites;
    }
    std::vector<Node> kept;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (drop[i]) continue;
      for (ValueId& v : g_.nodes[i].inputs)
        if (v != kNoValue && replace[static_cast<size_t>(v)] != kNoValue) v = replace[static_cast<size_t>(v)];
      kept.push_back(std::move(g_.nodes[i]));
    }
    g_.nodes = std::move(kept);
  }

  // ---- 3. fusion ----

  // A pending assignment of quantization parameters to a u8 activation.
  struct QuantSet {
    ValueId v;
    QuantParams q;
  };

  // x = DQ(x_q) with x_q a u8 activation quantized per tensor.
  QuantSet act_input(ValueId x, const char* what) const {
    const Node* d = producer(x);
    if (!d || d->op != "DequantizeLinear") throw Fail{std::string(what) + " is not dequantized (no DequantizeLinear)"};
    ValueId q = d->inputs[0];
    if (cst(q)) throw Fail{std::string(what) + " is a constant"};
    if (g_.value(q).dtype != DType::u8)
      throw Fail{std::string(what) + " is " + dtype_name(g_.value(q).dtype) +
                 " and could not be converted to u8 (a reader other than DequantizeLinear / QLinear* uses it)"};
    Params p = node_params(*d, 1, 2, q);
    if (p.scale.size() != 1) throw Fail{std::string(what) + " is quantized per channel; lowbit needs per tensor"};
    return check_quant({q, act_quant(p, q)}, what);
  }

  QuantSet check_quant(QuantSet s, const char* what) const {
    const Value& v = g_.value(s.v);
    if (v.quant && !same_params(*v.quant, s.q))
      throw Fail{std::string(what) + " is dequantized with two different scales / zero points"};
    for (auto& p : pending_)
      if (p.v == s.v && !same_params(p.q, s.q))
        throw Fail{std::string(what) + " is dequantized with two different scales / zero points"};
    return s;
  }

  // Weights [M, ...] (channel axis `axis` of the stored tensor, transposed to [N, K] when axis = 1
  // of a 2-D tensor) as lowbit's symmetric i8 per output channel.
  struct Weights {
    Tensor w;
    QuantParams q;
  };
  // INT4 / UINT4 (opset 21) and INT2 / UINT2 (opset 25) weights become i4 / i2 codes, stored
  // packed: the native sub-byte form.
  Weights weights_from(const Tensor& data, const Params& p, int64_t channel_axis) const {
    const DType dt = data.dtype();
    const int bits = is_code_dtype(dt) ? bit_width(dt) : 0;
    if (bits != 8 && bits != 4 && bits != 2)
      throw Fail{std::string("weights are ") + dtype_name(dt) + ", not 8-, 4- or 2-bit integers"};
    const DType code = bits == 4 ? DType::i4 : bits == 2 ? DType::i2 : DType::i8;
    const Shape& s = data.shape();
    const bool transpose = channel_axis == 1;
    if (transpose && s.size() != 2) throw Fail{"weights must be 2-D"};
    const int64_t M = s[static_cast<size_t>(channel_axis)], K = data.numel() / std::max<int64_t>(M, 1);
    // Blocked (group-wise) weights: along the input channels (axis 1 of [M, C, ...] weights, axis 0
    // of MatMul's [K, N]), lowbit's QuantParams::block_size with the scales in [M][blocks][taps].
    const int64_t in_axis = transpose ? 0 : 1;
    if (p.block > 0 && p.axis != in_axis)
      throw Fail{"weights are blocked along axis " + std::to_string(p.axis) + "; lowbit's group-wise weights block axis " +
                 std::to_string(in_axis) + " (the input channels)"};
    if (p.block == 0 && p.scale.size() != 1 && (p.axis != channel_axis || static_cast<int64_t>(p.scale.size()) != M))
      throw Fail{"weights are quantized along axis " + std::to_string(p.axis) + "; lowbit needs per output channel (axis " +
                 std::to_string(channel_axis) + ")"};
    const Shape ls = transpose ? Shape{M, K} : s;  // lowbit's [M, C, ...] order
    const WeightGroups wg = weight_groups(ls, p.block);
    // The ONNX scale / zero-point index of lowbit's group (m, c, tap) (MatMul: [blocks][N]).
    auto group_src = [&](int64_t m, int64_t c, int64_t t) {
      return transpose ? (c / p.block) * M + m : wg.index(m, c, t);
    };
    auto zp_of = [&](int64_t m, int64_t k) -> int32_t {
      if (p.zp.size() == 1) return p.zp[0];
      if (p.block > 0) return p.zp[static_cast<size_t>(group_src(m, k / wg.taps, k % wg.taps))];
      return p.zp[static_cast<size_t>(m)];
    };
    Weights r;
    r.w = Tensor(DType::i8, ls);
    r.q.axis = 0;
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t k = 0; k < K; ++k) {
        const int32_t z = zp_of(m, k);
        const int64_t src = transpose ? k * M + m : m * K + k;
        const int64_t v = read_int(data, src) - z;
        const int64_t lo = dtype_info(code).qmin, hi = dtype_info(code).qmax;
        if (v < lo || v > hi)
          throw Fail{"weights: zero point " + std::to_string(z) + " leaves values outside " + dtype_name(code) +
                     " (" + std::to_string(v) + "); lowbit's weights are symmetric"};
        r.w.data<int8_t>()[m * K + k] = static_cast<int8_t>(v);
      }
    }
    if (code != DType::i8) {
      // INT4 weights whose codes all lie in [-2, 1] are 2-bit codes (lowbit's default export writes
      // 2-bit weights as INT4, the form ONNX Runtime 1.30 runs): stored as i2, losslessly.
      DType narrowest = code;
      if (code == DType::i4) {
        narrowest = DType::i2;
        for (int64_t i = 0; i < r.w.numel(); ++i)
          if (r.w.data<int8_t>()[i] < dtype_info(DType::i2).qmin || r.w.data<int8_t>()[i] > dtype_info(DType::i2).qmax)
            narrowest = DType::i4;
      }
      r.w = convert_codes(r.w, narrowest);
      r.q.code = narrowest;
    }
    if (p.block > 0) {
      r.q.block_size = p.block;
      r.q.scale.assign(static_cast<size_t>(wg.count()), 0.0f);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t c = 0; c < wg.C; c += p.block)
          for (int64_t t = 0; t < wg.taps; ++t)
            r.q.scale[static_cast<size_t>(wg.index(m, c, t))] = p.scale[static_cast<size_t>(group_src(m, c, t))];
      r.q.zero_point.assign(r.q.scale.size(), 0);
    } else if (p.scale.size() == 1) {
      r.q.scale = {p.scale[0]};
      r.q.zero_point = {0};
    } else {
      r.q.scale = p.scale;
      r.q.zero_point.assign(p.scale.size(), 0);
    }
    return r;
  }

  Weights dq_weights(ValueId w, int64_t channel_axis) const {
    const Node* d = producer(w);
    if (!d || d->op != "DequantizeLinear") throw Fail{"weights are not DequantizeLinear of a constant"};
    const Tensor* data = cst(d->inputs[0]);
    if (!data) throw Fail{"weights are not constant"};
    Params p = params(*d, 1, 2, static_cast<int64_t>(data->shape().size()), d->attrs.get_int("axis", 1), data->dtype());
    return weights_from(*data, p, channel_axis);
  }

  // f32 bias [M]: a constant, or DequantizeLinear(i32 constant) evaluated as the reference does.
  std::optional<Tensor> bias(ValueId b, int64_t M) const {
    if (b == kNoValue) return std::nullopt;
    if (const Tensor* t = cst(b); t && t->dtype() == DType::f32 && t->numel() == M) return t->reshaped({M});
    const Node* d = producer(b);
    const Tensor* data = d && d->op == "DequantizeLinear" ? cst(d->inputs[0]) : nullptr;
    if (!data || data->numel() != M || data->dtype() != DType::i32)
      throw Fail{"bias is neither an f32 constant nor DequantizeLinear of an i32 constant of " + std::to_string(M) +
                 " values"};
    Params p = params(*d, 1, 2, static_cast<int64_t>(data->shape().size()), d->attrs.get_int("axis", 1), DType::i32);
    Tensor r(DType::f32, {M});
    for (int64_t m = 0; m < M; ++m) {
      const size_t a = p.scale.size() == 1 ? 0 : static_cast<size_t>(m);
      r.data<float>()[m] = static_cast<float>(read_int(*data, m) - p.zp[a]) * p.scale[a];
    }
    return r;
  }

  // y [-> Relu / Clip] -> QuantizeLinear (u8, per tensor). Marks the absorbed nodes.
  struct Tail {
    ValueId out = kNoValue;
    QuantParams q;
    float act_min = -std::numeric_limits<float>::infinity(), act_max = std::numeric_limits<float>::infinity();
    std::vector<NodeId> absorbed;
    bool quantized = false;
  };
  Tail tail(ValueId y, bool f32_ok) {
    Tail t;
    Node* u = sole_user(y);
    if (u && (u->op == "Relu" || u->op == "Clip")) {
      bool bounds_ok = true;
      if (u->op == "Relu") {
        t.act_min = 0.f;
      } else {
        for (size_t k = 1; k < 3; ++k) {
          ValueId v = Graph::input_or_none(*u, k);
          if (v == kNoValue) continue;
          const Tensor* b = cst(v);
          if (!b || b->numel() != 1 || b->dtype() != DType::f32) bounds_ok = false;
          else (k == 1 ? t.act_min : t.act_max) = b->data<float>()[0];
        }
      }
      Node* q = bounds_ok ? sole_user(u->outputs[0]) : nullptr;
      if (q && q->op == "QuantizeLinear") {
        t.absorbed.push_back(index_of(u));
        u = q;
      } else {
        t.act_min = -std::numeric_limits<float>::infinity();
        t.act_max = std::numeric_limits<float>::infinity();
      }
    }
    if (u && u->op == "QuantizeLinear") {
      ValueId o = u->outputs[0];
      if (g_.value(o).dtype != DType::u8)
        throw Fail{std::string("output is quantized to ") + dtype_name(g_.value(o).dtype) +
                   " and could not be converted to u8"};
      Params p = node_params(*u, 1, 2, u->inputs[0]);
      if (p.scale.size() != 1) throw Fail{"output is quantized per channel; lowbit needs per tensor"};
      t.absorbed.push_back(index_of(u));
      t.out = o;
      t.q = act_quant(p, o);
      t.quantized = true;
      return t;
    }
    if (!f32_ok) throw Fail{"output is not quantized (no QuantizeLinear follows)"};
    t.out = y;
    t.absorbed.clear();
    t.act_min = -std::numeric_limits<float>::infinity();
    t.act_max = std::numeric_limits<float>::infinity();
    return t;
  }

  void commit(NodeId n, Node fused, const Tail& t, std::vector<QuantSet> inputs) {
    if (std::isfinite(t.act_min)) fused.attrs.set("act_min", t.act_min);
    if (std::isfinite(t.act_max)) fused.attrs.set("act_max", t.act_max);
    fused.attrs.erase(kQdqUnfusedAttr);
    erase_[static_cast<size_t>(n)] = 1;
    for (NodeId a : t.absorbed) erase_[static_cast<size_t>(a)] = 1;
    if (t.quantized) {
      g_.value(t.out).dtype = DType::u8;
      g_.value(t.out).quant = t.q;
    }
    for (auto& s : inputs) {
      g_.value(s.v).quant = s.q;
      pending_.push_back(s);
    }
    added_.push_back(std::move(fused));
    ++st_.fused;
    ++st_.rewrites;
  }

  ValueId weight_const(const Node& n, Weights w) {
    ValueId id = g_.add_constant(g_.unique_name(n.name + "_weight_" + dtype_name(w.w.dtype())), std::move(w.w));
    g_.value(id).quant = std::move(w.q);
    return id;
  }
  ValueId bias_const(const Node& n, std::optional<Tensor> b) {
    if (!b) return kNoValue;
    return g_.add_constant(g_.unique_name(n.name + "_bias_f32"), std::move(*b));
  }

  static Attributes conv_attrs(const Attributes& a) {
    Attributes r;
    for (const char* k : {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad"})
      if (a.has(k)) r.set(k, a.all().at(k));
    return r;
  }

  void fuse_conv(NodeId i) {
    const Node& n = g_.nodes[static_cast<size_t>(i)];
    if (n.inputs.size() < 2 || g_.value(n.inputs[0]).shape.size() != 4) throw Fail{"only 2-D convolution is supported"};
    QuantSet x = act_input(n.inputs[0], "input");
    const int64_t M = g_.value(n.inputs[1]).shape.at(0);
    Weights w = dq_weights(n.inputs[1], 0);
    auto b = bias(Graph::input_or_none(n, 2), M);
    Tail t = tail(n.outputs[0], false);
    Node f{n.name, "QConv", {}, {t.out}, conv_attrs(n.attrs)};
    f.inputs = {x.v, weight_const(n, std::move(w)), bias_const(n, std::move(b))};
    commit(i, std::move(f), t, {x});
  }

  void fuse_gemm(NodeId i) {
    const Node& n = g_.nodes[static_cast<size_t>(i)];
    const bool matmul = n.op == "MatMul";
    const Attributes& a = n.attrs;
    if (g_.value(n.inputs[0]).shape.size() != 2) throw Fail{"input must be 2-D for QGemm"};
    if (!matmul && (a.get_int("transA", 0) != 0 || a.get_float("alpha", 1.f) != 1.f || a.get_float("beta", 1.f) != 1.f))
      throw Fail{"transA / alpha / beta other than 0 / 1 / 1"};
    QuantSet x = act_input(n.inputs[0], "input");
    const bool trans_b = !matmul && a.get_int("transB", 0) != 0;
    Weights w = dq_weights(n.inputs[1], trans_b ? 0 : 1);
    const int64_t N = w.w.shape()[0];
    auto b = matmul ? std::nullopt : bias(Graph::input_or_none(n, 2), N);
    Tail t = tail(n.outputs[0], true);
    Attributes attrs;
    attrs.set("transB", int64_t{1});
    Node f{n.name, "QGemm", {}, {t.out}, attrs};
    f.inputs = {x.v, weight_const(n, std::move(w)), bias_const(n, std::move(b))};
    commit(i, std::move(f), t, {x});
  }

  void fuse_add(NodeId i) {
    const Node& n = g_.nodes[static_cast<size_t>(i)];
    if (n.inputs.size() != 2 || g_.value(n.inputs[0]).shape != g_.value(n.inputs[1]).shape)
      throw Fail{"operands of different shapes (QAdd does not broadcast)"};
    QuantSet a = act_input(n.inputs[0], "A");
    QuantSet b = act_input(n.inputs[1], "B");
    if (a.v == b.v && !same_params(a.q, b.q)) throw Fail{"A and B dequantize one value differently"};
    Tail t = tail(n.outputs[0], false);
    Node f{n.name, "QAdd", {a.v, b.v}, {t.out}, {}};
    commit(i, std::move(f), t, {a, b});
  }

  // QLinear*: activation operand `i` with scale / zero point inputs si / zi.
  QuantSet qlinear_act(const Node& n, size_t i, size_t si, size_t zi, const char* what) const {
    ValueId v = n.inputs[i];
    if (cst(v)) throw Fail{std::string(what) + " is a constant"};
    if (g_.value(v).dtype != DType::u8)
      throw Fail{std::string(what) + " is " + dtype_name(g_.value(v).dtype) + " and could not be converted to u8"};
    Params p = params(n, si, zi, 0, 0, DType::u8);
    if (p.scale.size() != 1) throw Fail{std::string(what) + " must be quantized per tensor"};
    return check_quant({v, per_tensor(p)}, what);
  }
  Tail qlinear_out(const Node& n) const {
    Tail t;
    t.out = n.outputs[0];
    if (g_.value(t.out).dtype != DType::u8)
      throw Fail{std::string("output is ") + dtype_name(g_.value(t.out).dtype) + " and could not be converted to u8"};
    t.q = per_tensor(params(n, 6, 7, 0, 0, DType::u8));
    t.quantized = true;
    return t;
  }

  void fuse_qlinear_conv(NodeId i) {
    const Node& n = g_.nodes[static_cast<size_t>(i)];
    if (g_.value(n.inputs[0]).shape.size() != 4) throw Fail{"only 2-D convolution is supported"};
    QuantSet x = qlinear_act(n, 0, 1, 2, "input");
    const Tensor* wt = cst(n.inputs[3]);
    if (!wt) throw Fail{"weights are not constant"};
    Params wp = params(n, 4, 5, 4, 0, wt->dtype());
    const int64_t M = wt->shape()[0];
    Weights w = weights_from(*wt, wp, 0);
    Tail t = qlinear_out(n);
    std::optional<Tensor> b;
    if (ValueId bv = Graph::input_or_none(n, 8); bv != kNoValue) {
      const Tensor* bt = cst(bv);
      if (!bt || bt->dtype() != DType::i32 || bt->numel() != M) throw Fail{"bias is not a constant i32 [M]"};
      // B is in units of s_x * s_w[m].
      b = Tensor(DType::f32, {M});
      for (int64_t m = 0; m < M; ++m)
        b->data<float>()[m] = static_cast<float>(double(read_int(*bt, m)) * double(x.q.scale[0]) *
                                                 double(wp.scale[wp.scale.size() == 1 ? 0 : size_t(m)]));
    }
    Node f{n.name, "QConv", {}, {t.out}, conv_attrs(n.attrs)};
    f.inputs = {x.v, weight_const(n, std::move(w)), bias_const(n, std::move(b))};
    commit(i, std::move(f), t, {x});
  }

  void fuse_qlinear_matmul(NodeId i) {
    const Node& n = g_.nodes[static_cast<size_t>(i)];
    if (g_.value(n.inputs[0]).shape.size() != 2) throw Fail{"A must be 2-D for QGemm"};
    QuantSet x = qlinear_act(n, 0, 1, 2, "A");
    const Tensor* bt = cst(n.inputs[3]);
    if (!bt || bt->shape().size() != 2) throw Fail{"B is not a constant 2-D matrix"};
    Params bp = params(n, 4, 5, 2, 1, bt->dtype());  // per column: along N
    Weights w = weights_from(*bt, bp, 1);
    Tail t = qlinear_out(n);
    Attributes attrs;
    attrs.set("transB", int64_t{1});
    Node f{n.name, "QGemm", {}, {t.out}, attrs};
    f.inputs = {x.v, weight_const(n, std::move(w)), kNoValue};
    commit(i, std::move(f), t, {x});
  }

  // An op is worth a note only if it reads dequantized data.
  bool reads_dequantized(const Node& n) const {
    if (n.op == "QLinearConv" || n.op == "QLinearMatMul") return true;
    for (ValueId v : n.inputs) {
      const Node* p = producer(v);
      if (p && p->op == "DequantizeLinear") return true;
    }
    return false;
  }

  void fuse() {
    refresh();
    erase_.assign(g_.nodes.size(), 0);
    const size_t count = g_.nodes.size();
    for (size_t i = 0; i < count; ++i) {
      if (erase_[i]) continue;
      const std::string op = g_.nodes[i].op;
      const NodeId id = static_cast<NodeId>(i);
      try {
        if (op == "Conv") fuse_conv(id);
        else if (op == "Gemm" || op == "MatMul") fuse_gemm(id);
        else if (op == "Add") fuse_add(id);
        else if (op == "QLinearConv") fuse_qlinear_conv(id);
        else if (op == "QLinearMatMul") fuse_qlinear_matmul(id);
      } catch (const Fail& f) {
        Node& n = g_.nodes[i];
        if (!reads_dequantized(n)) continue;
        n.attrs.set(kQdqUnfusedAttr, f.why);
        st_.unfused.push_back({n.label(), f.why});
      }
    }
    std::vector<Node> kept;
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (!erase_[i]) kept.push_back(std::move(g_.nodes[i]));
    for (auto& n : added_) kept.push_back(std::move(n));
    g_.nodes = std::move(kept);
  }

  Graph& g_;
  QdqStats& st_;
  Graph probe_;
  std::vector<NodeId> producer_;
  std::vector<std::vector<NodeId>> consumers_;
  std::vector<char> erase_;
  std::vector<Node> added_;
  std::vector<QuantSet> pending_;
  std::map<ValueId, DType> codes_;  // activations stored as u8 whose codes are narrower (flip)
};

}  // namespace

int fuse_qdq(Graph& g, QdqStats* stats) {
  bool any = false;
  for (const Node& n : g.nodes) {
    // A graph quantized by lowbit itself is already in its final form: its remaining Q/DQ nodes
    // surround ops the guard deliberately kept in fp32.
    if (lowbit_quantized(n.op)) return 0;
    any |= is_qdq_op(n.op);
  }
  if (!any) return 0;
  QdqStats local;
  QdqStats& st = stats ? *stats : local;
  QdqFuser(g, st).run();
  if (verbose("qdq"))  // LOWBIT_VERBOSE=qdq
    log_message(LogLevel::trace, "lowbit qdq: " + std::to_string(st.rewrites) + " rewrite(s), " +
                                     std::to_string(st.fused) + " quantized op(s) fused");
  // Like the guard: an op that stays slow is never silent.
  if (!st.unfused.empty()) {
    std::string msg = std::to_string(st.unfused.size()) +
                      " quantized op(s) of the QDQ/QOperator model stay as imported (fp32 / reference kernels) "
                      "because lowbit's int8 form cannot express them exactly:";
    for (const QdqNote& n : st.unfused) msg += "\n  " + n.node + ": " + n.reason;
    log_warning(msg);
  }
  return st.rewrites;
}

}  // namespace lowbit
