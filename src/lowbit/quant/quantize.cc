#include "lowbit/quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/common/settings.h"
#include "lowbit/ir/codes.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/passes/graph_match.h"

namespace lowbit {

StorageMode parse_storage_mode(const std::string& s) {
  if (s == "native") return StorageMode::native;
  if (s == "logical") return StorageMode::logical;
  throw Error("--mode must be native or logical (got '" + s + "')");
}

WeightScale parse_weight_scale(const std::string& s) {
  if (s == "auto") return WeightScale::automatic;
  if (s == "max") return WeightScale::max;
  if (s == "mse") return WeightScale::mse;
  throw Error("--weight-scale must be auto, max or mse (got '" + s + "')");
}

Keep8Bit parse_keep_8bit(const std::string& s) {
  Keep8Bit k;
  k.first = k.last = false;
  if (s == "none") return k;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.empty()) throw Error("--keep-8bit: empty item in '" + s + "' (first,last | none | NODE,...)");
    if (item == "first") k.first = true;
    else if (item == "last") k.last = true;
    else if (item == "none") throw Error("--keep-8bit: 'none' cannot be combined with other items");
    else k.nodes.insert(item);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return k;
}

std::map<std::string, Precision> parse_layer_precisions(const std::string& s) {
  std::map<std::string, Precision> m;
  size_t pos = 0;
  while (!s.empty() && pos <= s.size()) {
    const size_t comma = s.find(',', pos);
    const std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const size_t eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw Error("--layer-precision: '" + item + "' is not NODE=PRECISION (e.g. conv1=fp32,fc=int8)");
    const std::string node = item.substr(0, eq);
    if (m.count(node)) throw Error("--layer-precision: node '" + node + "' is given twice");
    m[node] = parse_precision(item.substr(eq + 1));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return m;
}

std::string layer_precisions_str(const std::map<std::string, Precision>& m) {
  std::string r;
  for (auto& [node, p] : m) r += (r.empty() ? "" : ",") + node + "=" + p.name();
  return r;
}

Precision node_precision(const std::string& node, const QuantizeOptions& opts, const std::set<std::string>& kept_8bit) {
  if (auto it = opts.layer_precision.find(node); it != opts.layer_precision.end()) return it->second;
  return kept_8bit.count(node) ? kInt8 : opts.precision;
}

namespace {

// Squared error of coding `w` (n values) with scale s in [lo, hi]. Clamping to the integer
// bounds first, then rounding with the 1.5 * 2^23 trick (round half to even for |x| < 2^22, as
// nearbyint under the default rounding mode) lets the compiler vectorize the loop: nearbyint is a
// libm call on baseline x86-64, and the search (27 trials of every weight) took 2.7 s of a 4.6 s
// ResNet-50 w4a8 quantize that way.
double code_error(const float* w, int64_t n, float s, float lo, float hi) {
  const float inv = 1.0f / s, magic = 12582912.0f;  // 1.5 * 2^23
  float acc[8] = {};  // eight lanes the compiler keeps in vectors (no -ffast-math needed)
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int j = 0; j < 8; ++j) {
      const float c = std::min(std::max(w[k + j] * inv, lo), hi);
      const float d = w[k + j] - ((c + magic) - magic) * s;
      acc[j] += d * d;
    }
  double e = 0;
  for (; k < n; ++k) {
    const float c = std::min(std::max(w[k] * inv, lo), hi);
    const float d = w[k] - ((c + magic) - magic) * s;
    e += double(d) * d;
  }
  for (float a : acc) e += a;
  return e;
}

// The MSE clipping search: s = f * max|w| / qmax over f in [0.20, 1.00], a coarse pass in steps
// of 0.05 and a fine one of 0.01 around the best (27 trials a channel instead of 81; on ResNet-50
// weights the two-pass choice matched the exhaustive one's error within 0.1%).
float mse_scale(const float* w, int64_t n, float amax, float lo, float hi) {
  auto scale_at = [&](float f) { return f * amax / hi; };
  float best_f = 1.0f;
  double best = code_error(w, n, scale_at(1.0f), lo, hi);
  for (int i = 4; i < 20; ++i) {
    const float f = 0.05f * static_cast<float>(i);
    const double e = code_error(w, n, scale_at(f), lo, hi);
    if (e < best) best = e, best_f = f;
  }
  const float c = best_f;
  for (int i = -4; i <= 4; ++i) {
    const float f = c + 0.01f * static_cast<float>(i);
    if (i == 0 || f < 0.2f || f > 1.0f) continue;
    const double e = code_error(w, n, scale_at(f), lo, hi);
    if (e < best) best = e, best_f = f;
  }
  return scale_at(best_f);
}

// Binary weights: sign(w) (0 counts as +1) times the channel's mean |w|, the scale that minimises
// the squared error of alpha * sign(w) (XNOR-Net); no clipping search (one level a side).
Tensor quantize_weights_b1(const Tensor& w, DType storage, QuantParams& q) {
  const int64_t M = w.shape()[0], per = w.numel() / M;
  Tensor out(storage, w.shape());
  q = QuantParams{};
  q.axis = 0;
  q.code = DType::b1;
  for (int64_t m = 0; m < M; ++m) {
    const float* src = w.data<float>() + m * per;
    double sum = 0;
    for (int64_t k = 0; k < per; ++k) {
      sum += std::fabs(src[k]);
      store_code(out.raw(), storage, m * per + k, src[k] < 0.0f ? -1 : 1);
    }
    q.scale.push_back(sum > 0 ? static_cast<float>(sum / static_cast<double>(per)) : 1.0f);
    q.zero_point.push_back(0);
  }
  return out;
}

// The scale of one set of weights (an output channel, or a group): max |w| / qmax, or the MSE
// clipping search; 1 for an all-zero set.
float weight_set_scale(const float* v, int64_t n, WeightScale rule, float lo, float hi) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(v[i]));
  if (!(amax > 0)) return 1.f;
  return rule == WeightScale::mse ? mse_scale(v, n, amax, lo, hi) : amax / hi;
}

}  // namespace

Tensor quantize_weights(const Tensor& w, DType code, WeightScale rule, DType storage, QuantParams& q,
                        int64_t block_size) {
  const DTypeInfo& d = dtype_info(code);
  if (!d.is_signed || d.is_float || d.bits > 8)
    throw Error(std::string("weight codes must be i8, i4, i2 or b1, not ") + d.name);
  if (code == DType::b1) return quantize_weights_b1(w, storage, q);
  if (rule == WeightScale::automatic) rule = d.bits < 8 ? WeightScale::mse : WeightScale::max;
  const int64_t M = w.shape()[0], per = w.numel() / M;
  // 8-bit weights keep the narrow range [-127, 127] (so -w is representable, as before); below 8
  // bits every level counts: i4 [-8, 7], i2 [-2, 1].
  const bool narrow = d.bits == 8;
  const float lo = static_cast<float>(d.qmin + (narrow ? 1 : 0)), hi = static_cast<float>(d.qmax);
  Tensor out(storage, w.shape());
  q = QuantParams{};
  q.axis = 0;
  q.narrow = narrow;
  if (code != DType::i8) q.code = code;
  if (block_size > 0 && w.shape().size() >= 2) {
    // Group-wise: a scale per block of input channels (axis 1), output channel and tap, chosen by
    // the same rule as a channel's; the scales in ONNX's blocked layout (graph.h, WeightGroups).
    const WeightGroups wg = weight_groups(w.shape(), block_size);
    q.block_size = block_size;
    q.scale.assign(static_cast<size_t>(wg.count()), 1.0f);
    q.zero_point.assign(static_cast<size_t>(wg.count()), 0);
    std::vector<float> vals;
    std::vector<int64_t> at;
    for (int64_t m = 0; m < wg.M; ++m)
      for (int64_t c0 = 0; c0 < wg.C; c0 += wg.block)
        for (int64_t t = 0; t < wg.taps; ++t) {
          vals.clear();
          at.clear();
          for (int64_t c = c0; c < std::min(wg.C, c0 + wg.block); ++c) {
            at.push_back((m * wg.C + c) * wg.taps + t);
            vals.push_back(w.data<float>()[at.back()]);
          }
          const float scale = weight_set_scale(vals.data(), static_cast<int64_t>(vals.size()), rule, lo, hi);
          for (size_t i = 0; i < vals.size(); ++i)
            store_code(out.raw(), storage, at[i], static_cast<int32_t>(std::clamp(std::nearbyint(vals[i] / scale), lo, hi)));
          q.scale[static_cast<size_t>(wg.index(m, c0, t))] = scale;
        }
    return out;
  }
  for (int64_t m = 0; m < M; ++m) {
    const float* src = w.data<float>() + m * per;
    const float scale = weight_set_scale(src, per, rule, lo, hi);
    for (int64_t k = 0; k < per; ++k)
      store_code(out.raw(), storage, m * per + k,
                 static_cast<int32_t>(std::clamp(std::nearbyint(src[k] / scale), lo, hi)));
    q.scale.push_back(scale);
    q.zero_point.push_back(0);
  }
  return out;
}

namespace {

// Builds the quantized graph node by node, tracking for every fp32 value its f32 and quantized
// (u8-stored codes) forms in the new graph and creating the missing one on demand
// (QuantizeLinear / DequantizeLinear).
// The values a Concat joins (its inputs and its output, transitively: DenseNet's dense block
// concatenates every earlier feature map again at each layer) get one range, the union of theirs,
// so their producers write codes the Concats take as they are. With a range each, every Concat
// requantized every input: 537 table lookups in DenseNet-121 where it has 120 convs.
std::vector<Range> concat_groups_share_ranges(const Graph& g, std::vector<Range> ranges) {
  std::vector<size_t> parent(g.values.size());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto find = [&](size_t v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  };
  bool any = false;
  for (const Node& n : g.nodes) {
    if (n.op != "Concat" || n.outputs.size() != 1) continue;
    const size_t y = static_cast<size_t>(n.outputs[0]);
    if (!ranges[y].seen) continue;
    for (ValueId v : n.inputs)
      if (v != kNoValue && !g.is_constant(v) && ranges[static_cast<size_t>(v)].seen) {
        parent[find(static_cast<size_t>(v))] = find(y);
        any = true;
      }
  }
  if (!any) return ranges;
  std::vector<Range> united(ranges.size());
  for (size_t v = 0; v < ranges.size(); ++v) {
    if (!ranges[v].seen) continue;
    Range& u = united[find(v)];
    if (!u.seen) u = ranges[v];
    u.lo = std::min(u.lo, ranges[v].lo);
    u.hi = std::max(u.hi, ranges[v].hi);
  }
  for (size_t v = 0; v < ranges.size(); ++v)
    if (ranges[v].seen && find(v) != v) {
      ranges[v].lo = united[find(v)].lo;
      ranges[v].hi = united[find(v)].hi;
    } else if (ranges[v].seen) {
      ranges[v].lo = united[v].lo;
      ranges[v].hi = united[v].hi;
    }
  return ranges;
}

class Rewriter {
 public:
  Rewriter(const Graph& f, const std::vector<Range>& ranges, const QuantizeOptions& opts)
      : f_(f), ranges_(concat_groups_share_ranges(f, ranges)), opts_(opts), widths_(activation_widths(f, opts)) {
    f32_.assign(f.values.size(), kNoValue);
    u8_.assign(f.values.size(), kNoValue);
    q_.name = f.name;
    for (auto& [node, why] : nodes_kept_8bit(f, opts)) kept_8bit_.insert(node);
    consumers_ = f.consumers();
    absorbed_.assign(f.nodes.size(), 0);
  }

  Graph run(const std::set<std::string>& keep_fp32) {
    keep_fp32_ = &keep_fp32;
    for (ValueId v : f_.inputs) {
      const Value& val = f_.value(v);
      f32_[static_cast<size_t>(v)] = q_.add_value(val.name, val.dtype, val.shape, val.shape_known);
      q_.inputs.push_back(f32_[static_cast<size_t>(v)]);
    }
    for (size_t i = 0; i < f_.nodes.size(); ++i) {
      const Node& n = f_.nodes[i];
      if (absorbed_[i]) continue;  // its table is an earlier QLut's
      if (keep_fp32.count(n.name) || !quantize(n)) copy_fp32(n);
    }
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
    if (f_.is_constant(v)) {  // with its codes' parameters, if any (BinaryConv's b1 weights)
      slot = q_.add_constant(fv(v).name, *f_.constant(v));
      q_.value(slot).quant = fv(v).quant;
      return slot;
    }
    if (!is_u8(v)) throw Error("quantizer: value '" + fv(v).name + "' used before it is defined");
    ValueId u = u8_[static_cast<size_t>(v)];
    const QuantParams qp = *q_.value(u).quant;  // a copy: add_value below may reallocate
    slot = q_.add_value(q_.unique_name(fv(v).name + ".dq"), DType::f32, fv(v).shape, true);
    q_.add_node("DequantizeLinear", q_.unique_name(fv(v).name + ".dequantize"),
                {u, constant(qp.scale[0]), constant_u8(qp.zero_point[0])}, {slot});
    return slot;
  }

  // The activation parameters of fp32 value v, at the code width its consumers ask for.
  QuantParams act_params(ValueId v) const {
    return activation_params(ranges_[static_cast<size_t>(v)], widths_[static_cast<size_t>(v)]);
  }

  // Which weight codes --rounding gptq re-rounds: all but binary ones (signs, one level a side).
  static bool rounds(DType code) { return code != DType::b1; }

  // Weight codes of a Conv / Gemm node: its precision's (node_precision).
  DType weight_code(const Node& n) const { return node_precision(n.name, opts_, kept_8bit_).weight; }
  // The weights' codes; with --rounding gptq, codes re-rounded against the layer's inputs
  // (cached per layer and code width in the shared RoundingState); `corrected` is then the layer's bias (N values; none: zeros) with the shift that
  // leaves in the layer's mean output taken back.
  Tensor weights(const Node& n, const Tensor& w, QuantParams& q, const Tensor* bias, std::optional<Tensor>& corrected) const {
    const DType code = weight_code(n);
    const DType storage = opts_.mode == StorageMode::native ? code : DType::i8;
    // Group-wise scales for the nodes at the model's precision; the ones kept 8-bit (stem,
    // classifier) or given their own keep a scale per output channel.
    const bool own = kept_8bit_.count(n.name) || opts_.layer_precision.count(n.name);
    const int64_t block = own ? 0 : opts_.group_size;
    if (opts_.rounding == Rounding::nearest || !rounds(code))
      return quantize_weights(w, code, opts_.weight_scale, storage, q, block);
    RoundingState* st = opts_.rounding_state.get();
    if (!st || !st->inputs.count(n.name))
      throw Error("node " + n.label() + ": --rounding gptq needs its input stats (prepare_rounding)");
    const std::string key = n.name + "/" + dtype_name(code) + "/" + dtype_name(storage) + "/" +
                            std::to_string(static_cast<int>(opts_.weight_scale)) + "/" + std::to_string(block);
    {
      std::lock_guard<std::mutex> lock(st->mu);
      if (auto it = st->rounded.find(key); it != st->rounded.end()) {
        q = it->second.q;
        if (it->second.bias) corrected = it->second.bias->clone();
        st->outcomes[n.name] = it->second.outcome;
        return it->second.codes.clone();
      }
    }
    Tensor codes = quantize_weights(w, code, opts_.weight_scale, storage, q, block);
    const RoundingOutcome r = round_weights_gptq(w, q, code, storage, st->inputs.at(n.name), codes);
    if (verbose("rounding"))
      log_message(LogLevel::trace, "lowbit <rounding> " + n.name + ": " + (r.applied ? "gptq" : "nearest kept") +
                                       ", layer error " + std::to_string(r.error / std::max(r.nearest_error, 1e-30)) +
                                       " of nearest's (" + std::to_string(r.nearest_error) + ")");
    if (r.applied) {
      const int64_t N = w.shape()[0];
      corrected = bias ? bias->clone().reshaped({N}) : Tensor(DType::f32, {N});  // a Tensor copy shares its bytes
      for (int64_t i = 0; i < N; ++i) corrected->data<float>()[i] += r.bias_shift[static_cast<size_t>(i)];
    }
    std::lock_guard<std::mutex> lock(st->mu);
    st->rounded[key] = {codes.clone(), q, corrected ? std::optional<Tensor>(corrected->clone()) : std::nullopt, r};
    st->outcomes[n.name] = r;
    return codes;
  }
  std::string weight_name(const Node& n, ValueId w) const {
    return fv(w).name + "." + dtype_name(opts_.mode == StorageMode::native ? weight_code(n) : DType::i8);
  }

  ValueId u8(ValueId v) {
    ValueId& slot = u8_[static_cast<size_t>(v)];
    if (slot != kNoValue) return slot;
    QuantParams qp = act_params(v);
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
    if (n.op == "BinaryConv" && !f_.is_constant(x)) return quantize_binary_conv(n, x, y);
    if (f_.is_constant(x) || fv(x).dtype != DType::f32) return false;
    if (n.op == "Conv") return quantize_conv(n, x, y);
    if (n.op == "Gemm") return quantize_gemm(n, x, y);
    if (n.op == "Add" && n.inputs.size() == 2) return quantize_add(n);
    if (n.op == "Mul" && n.inputs.size() == 2) return quantize_mul(n);
    if (n.op == "Concat") return quantize_concat(n, y);
    if (elementwise_map(n.op) || channel_map(n.op)) return quantize_lut(n, x, y);
    // Ops that move, select or average codes keep the input's scale: no requantization needed;
    // except GlobalAveragePool, whose mean spans a fraction of its input's range (7-36x narrower in
    // squeeze-excite blocks, #11): it requantizes to its own calibrated range (kernels/qu8-pool).
    const QuantPassthrough how = quant_passthrough(n.op);
    if (how == QuantPassthrough::no || !is_u8(x)) return false;
    // Several outputs only where codes just move (Split): each is a part of the input's codes.
    if (n.outputs.size() != 1 && how != QuantPassthrough::moves) return false;
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (n.inputs[i] != kNoValue && !f_.is_constant(n.inputs[i])) return false;
    std::vector<ValueId> in{u8_[static_cast<size_t>(x)]};
    for (size_t i = 1; i < n.inputs.size(); ++i) in.push_back(n.inputs[i] == kNoValue ? kNoValue : f32(n.inputs[i]));
    QuantParams qp = *q_.value(in[0]).quant;
    if (n.op == "GlobalAveragePool" && has_range(y)) qp = act_params(y);
    std::vector<ValueId> out;
    for (ValueId o : n.outputs) out.push_back(o == kNoValue ? kNoValue : new_u8(o, qp));
    q_.add_node(n.op, n.name, in, out, n.attrs);
    return true;
  }

  bool quantize_conv(const Node& n, ValueId x, ValueId y) {
    const Tensor* w = f_.constant(n.inputs[1]);
    ValueId b = Graph::input_or_none(n, 2), r = Graph::input_or_none(n, 3);
    if (!w || fv(x).shape.size() != 4 || !has_range(x) || !has_range(y)) return false;
    if (b != kNoValue && !f_.is_constant(b)) return false;
    if (r != kNoValue && !has_range(r)) return false;
    QuantParams wq;
    std::optional<Tensor> bias;
    Tensor wt = weights(n, *w, wq, b == kNoValue ? nullptr : f_.constant(b), bias);
    ValueId wid = q_.add_constant(q_.unique_name(weight_name(n, n.inputs[1])), std::move(wt));
    q_.value(wid).quant = wq;
    const ValueId xq = u8(x);  // first: the values keep the order they always had in the graph
    ValueId bid = b == kNoValue ? kNoValue : f32(b);
    if (bias)  // corrected for the rounding
      bid = q_.add_constant(q_.unique_name(b == kNoValue ? n.name + ".bias" : fv(b).name), std::move(*bias));
    std::vector<ValueId> in{xq, wid, bid};
    if (r != kNoValue) in.push_back(u8(r));
    q_.add_node("QConv", n.name, in, {new_u8(y, act_params(y))}, n.attrs);
    return true;
  }

  // An imported binary conv (passes/binarize.cc) keeps its b1 weights; it reads the sign of its
  // input's u8 codes (or packed signs as they are) and writes u8 codes, residual included (or
  // packed signs, which need no range).
  bool quantize_binary_conv(const Node& n, ValueId x, ValueId y) {
    const bool packed_in = fv(x).dtype == DType::b1, signs_out = fv(y).dtype == DType::b1;
    ValueId b = Graph::input_or_none(n, 2), r = Graph::input_or_none(n, 3);
    if ((!packed_in && (fv(x).dtype != DType::f32 || !has_range(x))) || (!signs_out && !has_range(y)) ||
        (r != kNoValue && !has_range(r)))
      return false;
    if (b != kNoValue && !f_.is_constant(b)) return false;
    std::vector<ValueId> in{packed_in ? f32(x) : u8(x), f32(n.inputs[1]), b == kNoValue ? kNoValue : f32(b)};
    if (r != kNoValue) in.push_back(u8(r));
    ValueId out;
    if (signs_out) {  // tracked like an fp32 value: its readers take it as it is
      out = q_.add_value(q_.unique_name(fv(y).name), DType::b1, fv(y).shape, true);
      f32_[static_cast<size_t>(y)] = out;
    } else {
      out = new_u8(y, act_params(y));
    }
    q_.add_node("BinaryConv", n.name, in, {out}, n.attrs);
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
    std::optional<Tensor> bias_t;
    Tensor wt = weights(n, wnk, wq, c == kNoValue ? nullptr : f_.constant(c), bias_t);
    if (!bias_t && c != kNoValue) bias_t = f_.constant(c)->reshaped({N});
    ValueId wid = q_.add_constant(q_.unique_name(weight_name(n, n.inputs[1])), std::move(wt));
    q_.value(wid).quant = wq;
    ValueId bias = kNoValue;
    if (bias_t) bias = q_.add_constant(q_.unique_name(c == kNoValue ? n.name + ".bias" : fv(c).name), std::move(*bias_t));
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
      out = new_u8(y, act_params(y));
    }
    q_.add_node("QGemm", n.name, {u8(x), wid, bias}, {out}, attrs);
    return true;
  }

  bool quantize_add(const Node& n) {
    ValueId a = n.inputs[0], b = n.inputs[1], y = n.outputs[0];
    if (f_.is_constant(a) || f_.is_constant(b) || fv(a).shape != fv(b).shape) return false;
    if (!has_range(a) || !has_range(b) || !has_range(y) || (!is_u8(a) && !is_u8(b))) return false;
    q_.add_node("QAdd", n.name, {u8(a), u8(b)}, {new_u8(y, act_params(y))}, n.attrs);
    return true;
  }

  // A product of two activations where one is the other's shape or a scale per leading index
  // (squeeze-excite: x * Sigmoid(fc(pool(x))) with the scale [N, C, 1, 1]).
  bool quantize_mul(const Node& n) {
    ValueId a = n.inputs[0], b = n.inputs[1], y = n.outputs[0];
    if (f_.is_constant(a) || f_.is_constant(b) || !has_range(a) || !has_range(b) || !has_range(y)) return false;
    if (!is_u8(a) && !is_u8(b)) return false;
    auto scales = [&](const Shape& big, const Shape& small) {  // small: big's leading dims, then ones
      if (big.size() != small.size()) return false;
      bool ones = false;
      for (size_t i = 0; i < big.size(); ++i) {
        ones |= small[i] != big[i];
        if (ones && small[i] != 1) return false;
      }
      return true;
    };
    if (!scales(fv(a).shape, fv(b).shape)) std::swap(a, b);
    if (!scales(fv(a).shape, fv(b).shape) || fv(y).shape != fv(a).shape) return false;
    q_.add_node("QMul", n.name, {u8(a), u8(b)}, {new_u8(y, act_params(y))}, n.attrs);
    return true;
  }

  // An element-wise map on codes: 256 possible inputs, so the op runs once at quantization time on
  // every dequantized code, and the node becomes a table lookup (QLut). Its result is the fp32 op
  // between a DequantizeLinear and a QuantizeLinear, by construction; the op and its constant
  // inputs stay on the node for the QDQ export.
  bool quantize_lut(const Node& n, ValueId x, ValueId y) {
    if (!is_u8(x) || !has_range(y) || n.outputs.size() != 1) return false;
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (n.inputs[i] != kNoValue && !f_.is_constant(n.inputs[i])) return false;
    if (channel_map(n.op)) return quantize_channel_map(n, x, y);
    const QuantParams qx = *q_.value(u8_[static_cast<size_t>(x)]).quant;
    Graph m;  // the op alone, on the 256 codes
    std::vector<ValueId> ins{m.add_value("codes", DType::f32, {256}, true)};
    std::vector<const Tensor*> args{nullptr};
    for (size_t i = 1; i < n.inputs.size(); ++i) {
      ins.push_back(n.inputs[i] == kNoValue ? kNoValue : m.add_constant(fv(n.inputs[i]).name, *f_.constant(n.inputs[i])));
      args.push_back(n.inputs[i] == kNoValue ? nullptr : f_.constant(n.inputs[i]));
    }
    m.add_node(n.op, n.name, ins, {m.add_value("mapped")}, n.attrs);
    validate(m);
    Tensor codes(DType::f32, {256});
    for (int32_t c = 0; c < 256; ++c) codes.data<float>()[c] = (static_cast<float>(c) - qx.zero_point[0]) * qx.scale[0];
    args[0] = &codes;
    const std::vector<Tensor> mapped = evaluate_reference(m, m.nodes[0], args);
    float scale = 1.0f, shift = 0.0f;
    std::vector<NodeId> taken;
    if (const ValueId last = absorb_affine(y, scale, shift, taken); last != y && has_range(last)) {
      y = last;
      for (NodeId t : taken) absorbed_[static_cast<size_t>(t)] = 1;
    } else {
      scale = 1.0f, shift = 0.0f;
    }
    ValueId out = new_u8(y, act_params(y));
    const QuantParams& qy = *q_.value(out).quant;
    const CodeRange range = code_range(q_.value(out));
    Tensor table(DType::u8, {256});
    for (int32_t c = 0; c < 256; ++c) {
      float v = mapped[0].data<float>()[c];  // NaN (Sqrt of a negative code) reads as 0
      if (scale != 1.0f || shift != 0.0f) {     // as the Mul and Add it took in: two roundings
        const float scaled = v * scale;
        v = scaled + shift;
      }
      const float r = std::isnan(v) ? 0.0f : std::clamp(std::nearbyintf(v / qy.scale[0]), -1e9f, 1e9f);
      table.data<uint8_t>()[c] =
          static_cast<uint8_t>(std::clamp<int64_t>(static_cast<int64_t>(r) + qy.zero_point[0], range.lo, range.hi));
    }
    std::vector<ValueId> in{u8_[static_cast<size_t>(x)], q_.add_constant(q_.unique_name(n.name + ".table"), table)};
    for (size_t i = 1; i < n.inputs.size(); ++i) in.push_back(n.inputs[i] == kNoValue ? kNoValue : f32(n.inputs[i]));
    Attributes attrs = n.attrs;
    attrs.set("op", n.op);
    if (scale != 1.0f) attrs.set("post_scale", scale);
    if (shift != 0.0f) attrs.set("post_shift", shift);
    q_.add_node("QLut", n.name, in, {out}, attrs);
    return true;
  }

  // A per-channel map (an inference BatchNormalization BN folding left: DenseNet-121's 58 after
  // each Concat, with the Relu after it fused as its clamp) becomes a QLut with a table per
  // channel, derived from its constants when the kernel is made (ir/channel_table.h), not
  // stored: one pass over u8 codes instead of DequantizeLinear, the fp32 op and QuantizeLinear
  // (three passes, two over fp32: 3.6 of DenseNet-121's 14.4 int8 ms on Zen 5, 1 thread).
  bool quantize_channel_map(const Node& n, ValueId x, ValueId y) {
    const Shape& xs = fv(x).shape;
    if (n.op != "BatchNormalization" || n.inputs.size() != 5 || xs.size() < 2 || xs[1] <= 0 ||
        n.attrs.get_int("training_mode", 0) != 0)
      return false;
    const ValueId out = new_u8(y, act_params(y));
    std::vector<ValueId> in{u8_[static_cast<size_t>(x)], kNoValue};
    for (size_t i = 1; i < n.inputs.size(); ++i) in.push_back(f32(n.inputs[i]));
    Attributes attrs = n.attrs;
    attrs.set("op", n.op);
    q_.add_node("QLut", n.name, in, {out}, attrs);
    return true;
  }

  // The scalar affine steps after an element-wise map that only the map's output reads (Mul or
  // Add by one constant; Sub or Div by one on the right): PP-LCNet's learnable scale and shift
  // after every HardSwish, 24 in the PP-OCRv4 detector. The map's table applies them too, so they
  // cost nothing at run time and add no quantization of their own (as fp32 ops they ran between a
  // DequantizeLinear and a QuantizeLinear: four passes over the tensor). Returns the last value
  // taken in, the nodes in `taken`; `scale` and `shift` compose them as y * scale + shift.
  ValueId absorb_affine(ValueId y, float& scale, float& shift, std::vector<NodeId>& taken) const {
    for (;;) {
      const std::vector<NodeId>& readers = consumers_[static_cast<size_t>(y)];
      if (readers.size() != 1 || match::is_output(f_, y)) return y;
      const Node& c = f_.nodes[static_cast<size_t>(readers[0])];
      if (keep_fp32_->count(c.name) || c.inputs.size() != 2 || c.outputs.size() != 1 || c.inputs[0] == c.inputs[1])
        return y;
      const int side = c.inputs[0] == y ? 0 : 1;
      const std::optional<float> k = match::scalar(f_, c.inputs[static_cast<size_t>(1 - side)]);
      const ValueId out = c.outputs[0];
      if (!k || !std::isfinite(*k) || fv(out).shape != fv(y).shape || fv(out).dtype != DType::f32) return y;
      if (c.op == "Mul") {
        scale *= *k, shift *= *k;
      } else if (c.op == "Add") {
        shift += *k;
      } else if (c.op == "Sub" && side == 0) {
        shift -= *k;
      } else if (c.op == "Div" && side == 0 && *k != 0.0f) {
        scale /= *k, shift /= *k;
      } else {
        return y;
      }
      taken.push_back(readers[0]);
      y = out;
    }
  }

  // Concat of codes: one set of parameters for the output (its calibrated range, which covers
  // every input's), so the kernel only moves bytes. An input already coded with those parameters
  // goes in as it is; one coded otherwise is requantized by a 256-entry table (QLut "Identity",
  // exact: the table is computed per code), an fp32 one quantized straight to them. Only where an
  // input is already coded: a Concat of fp32 values stays fp32 and its readers quantize it. Before,
  // every Concat ran in fp32 between DequantizeLinear and QuantizeLinear: 62 of each in DenseNet-121.
  bool quantize_concat(const Node& n, ValueId y) {
    if (n.outputs.size() != 1 || !has_range(y)) return false;
    bool any_coded = false;
    for (ValueId v : n.inputs) {
      if (v == kNoValue || f_.is_constant(v) || fv(v).dtype != DType::f32) return false;
      if (!is_u8(v) && !has_range(v)) return false;
      any_coded |= is_u8(v);
    }
    if (!any_coded) return false;
    const QuantParams qy = act_params(y);
    std::vector<ValueId> in;
    for (ValueId v : n.inputs) in.push_back(coded_as(v, qy, n.name));
    q_.add_node("Concat", n.name, in, {new_u8(y, qy)}, n.attrs);
    return true;
  }

  // v's codes with parameters qy (per tensor): as they are when they already have them.
  ValueId coded_as(ValueId v, const QuantParams& qy, const std::string& reader) {
    auto same = [&](const QuantParams& a) {
      return a.scale == qy.scale && a.zero_point == qy.zero_point && a.code == qy.code && a.narrow == qy.narrow;
    };
    const std::string base = q_.unique_name(fv(v).name + "." + reader);
    if (!is_u8(v)) {
      ValueId out = q_.add_value(base + ".q", DType::u8, fv(v).shape, true);
      q_.value(out).quant = qy;
      q_.add_node("QuantizeLinear", base + ".quantize", {f32(v), constant(qy.scale[0]), constant_u8(qy.zero_point[0])},
                  {out});
      return out;
    }
    const ValueId u = u8_[static_cast<size_t>(v)];
    const QuantParams qx = *q_.value(u).quant;
    if (same(qx)) return u;
    ValueId out = q_.add_value(base + ".requantized", DType::u8, fv(v).shape, true);
    q_.value(out).quant = qy;
    const CodeRange range = code_range(q_.value(out));
    Tensor table(DType::u8, {256});
    for (int32_t c = 0; c < 256; ++c) {
      const float real = (static_cast<float>(c) - static_cast<float>(qx.zero_point[0])) * qx.scale[0];
      const float r = std::clamp(std::nearbyintf(real / qy.scale[0]), -1e9f, 1e9f);
      table.data<uint8_t>()[c] =
          static_cast<uint8_t>(std::clamp<int64_t>(static_cast<int64_t>(r) + qy.zero_point[0], range.lo, range.hi));
    }
    Attributes attrs;
    attrs.set("op", std::string("Identity"));
    q_.add_node("QLut", base + ".requantize", {u, q_.add_constant(base + ".table", table)}, {out}, attrs);
    return out;
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
  const std::vector<Range> ranges_;  // calibration's, one per Concat group (concat_groups_share_ranges)
  const QuantizeOptions& opts_;
  std::vector<DType> widths_;
  std::set<std::string> kept_8bit_;
  Graph q_;
  std::vector<ValueId> f32_, u8_;
  std::vector<std::vector<NodeId>> consumers_;  // of f_
  std::vector<char> absorbed_;                  // f_'s nodes a QLut's table took in
  const std::set<std::string>* keep_fp32_ = nullptr;
};

// The Conv / Gemm nodes the rewriter quantizes, in graph order (what "first" and "last" refer to).
// Independent of keep_fp32, so that the guard keeping a node in fp32 does not move "first".
std::vector<const Node*> quantizable_matmuls(const Graph& g) {
  std::vector<const Node*> r;
  for (const Node& n : g.nodes)
    if ((n.op == "Conv" || n.op == "Gemm") && g.is_constant(Graph::input_or_none(n, 1)))
      r.push_back(&n);
  return r;
}

}  // namespace

// layer_precision checked against the graph (each a quantizable Conv / Gemm, no per-layer binary),
// with its fp32 entries moved to keep_fp32, which is what the rewrite and the widths read.
static QuantizeOptions resolve_layers(const Graph& g, const QuantizeOptions& opts) {
  if (opts.layer_precision.empty()) return opts;
  std::set<std::string> matmuls;
  for (const Node* n : quantizable_matmuls(g)) matmuls.insert(n->name);
  QuantizeOptions r = opts;
  for (auto& [node, p] : opts.layer_precision) {
    if (!matmuls.count(node)) {
      bool known = false;
      for (const Node& n : g.nodes) known |= n.name == node;
      throw Error("--layer-precision: " + (known ? "node '" + node + "' is not a Conv or Gemm with constant weights"
                                                  : "the model has no node '" + node + "'"));
    }
    if (p.weight == DType::b1)
      throw Error("--layer-precision " + node + "=" + p.name() + ": binary layers need the whole model binary (--precision w1a1)");
    if (!p.quantized()) {
      r.keep_fp32.insert(node);
      r.layer_precision.erase(node);
    }
  }
  return r;
}

std::vector<std::pair<std::string, std::string>> nodes_kept_8bit(const Graph& g, const QuantizeOptions& opts) {
  std::vector<std::pair<std::string, std::string>> kept;
  if (!opts.precision.subbyte()) return kept;
  const std::vector<const Node*> mm = quantizable_matmuls(g);
  std::set<std::string> known;
  for (const Node& n : g.nodes) known.insert(n.name);
  for (const std::string& name : opts.keep_8bit.nodes)
    if (!known.count(name)) throw Error("--keep-8bit: the model has no node '" + name + "'");
  for (size_t i = 0; i < mm.size(); ++i) {
    const Node& n = *mm[i];
    std::string why;
    if (opts.keep_8bit.first && i == 0) why = "first " + n.op + " (the stem: --keep-8bit first)";
    else if (opts.keep_8bit.last && i + 1 == mm.size()) why = "last " + n.op + " (the classifier: --keep-8bit last)";
    else if (opts.keep_8bit.nodes.count(n.name)) why = "named by --keep-8bit";
    if (!why.empty()) kept.push_back({n.name, why});
  }
  return kept;
}

std::vector<DType> activation_widths(const Graph& g, const QuantizeOptions& given) {
  const QuantizeOptions opts = resolve_layers(g, given);
  std::set<std::string> kept;
  for (auto& [node, why] : nodes_kept_8bit(g, opts)) kept.insert(node);
  // bits[v]: the widest width a quantized consumer of v needs (0: none yet). Consumers come after
  // producers, so walking the nodes backwards sees every consumer of a value before its producer.
  std::vector<int> bits(g.values.size(), 0);
  auto need = [&](ValueId v, int b) {
    if (v != kNoValue && !g.is_constant(v)) bits[static_cast<size_t>(v)] = std::max(bits[static_cast<size_t>(v)], b);
  };
  auto out_bits = [&](const Node& n) {
    const int b = n.outputs.empty() || n.outputs[0] == kNoValue ? 0 : bits[static_cast<size_t>(n.outputs[0])];
    return b ? b : 8;
  };
  for (ValueId v : g.outputs) need(v, 8);
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    const Node& n = *it;
    const bool fp32 = opts.keep_fp32.count(n.name) > 0;
    if (!fp32 && (n.op == "Conv" || n.op == "Gemm")) {
      need(n.inputs[0], node_precision(n.name, opts, kept).act_bits());
      if (n.op == "Conv") need(Graph::input_or_none(n, 3), out_bits(n));  // a fused residual: as precise as the sum
    } else if (!fp32 && (n.op == "Add" || quant_passthrough(n.op) != QuantPassthrough::no)) {
      for (ValueId v : n.inputs) need(v, out_bits(n));
    } else {
      for (ValueId v : n.inputs) need(v, 8);  // read in fp32: the width only sets the dequantize's precision
    }
  }
  std::vector<DType> w(g.values.size(), DType::u8);
  if (!opts.precision.quantized()) return w;
  for (size_t v = 0; v < w.size(); ++v) w[v] = act_code_for_bits(bits[v] ? std::min(bits[v], 8) : 8);
  return w;
}

// A Conv that applies its activation itself (post_op) hides its output before the activation,
// which calibration measures and the quantized graph needs as a value of its own.
static void require_unfused_post_ops(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.attrs.has("post_op") || n.attrs.has("post_scale") || n.attrs.has("post_shift"))
      throw Error("node " + n.label() + " applies its " + n.attrs.get_string("post_op", "scale and shift") +
                  " inside the conv, so its output before the activation cannot be calibrated or quantized: "
                  "compile the fp32 model to quantize with CompileOptions::fuse_post_ops = false");
}

Graph quantize_graph(const Graph& g, const std::vector<Range>& ranges, const QuantizeOptions& given) {
  require_unfused_post_ops(g);
  const QuantizeOptions opts = resolve_layers(g, given);
  return Rewriter(g, ranges, opts).run(opts.keep_fp32);
}

std::vector<std::vector<Tensor>> calibration_samples(const Graph& g, const QuantizeOptions& opts) {
  if (!opts.samples.empty()) return opts.samples;
  std::vector<std::vector<Tensor>> synthetic;
  for (int i = 0; i < opts.synthetic_samples; ++i) synthetic.push_back(synthetic_inputs(g, opts.seed + static_cast<uint64_t>(i)));
  return synthetic;
}

std::vector<Range> calibrate_model(CompiledModel& fp32, const QuantizeOptions& opts) {
  if (!opts.precision.quantized()) throw Error("calibration needs a quantized precision, not fp32");
  require_unfused_post_ops(fp32.graph());
  if (opts.group_size < 0)
    throw Error("--group-size " + std::to_string(opts.group_size) + ": must be positive (or 0: per output channel)");
  if (opts.group_size > 0 && opts.precision.weight == DType::b1)
    throw Error("--group-size: binary weights take one scale per output channel (XNOR-Net's mean |w|)");
  // Sub-byte activations: their ranges are chosen for 15 or 3 steps; with the default minmax, by
  // the MSE search instead (a 4-bit code over the full range of a ReLU output wastes most levels).
  std::vector<ValueCalibration> per_value;
  const std::vector<DType> widths = activation_widths(fp32.graph(), opts);
  if (std::any_of(widths.begin(), widths.end(), [](DType w) { return w != DType::u8; })) {
    per_value.resize(widths.size());
    for (size_t v = 0; v < widths.size(); ++v) {
      per_value[v].steps = static_cast<int>(dtype_info(widths[v]).qmax);
      if (widths[v] != DType::u8 && opts.method == CalibrationMethod::minmax) per_value[v].method = CalibrationMethod::mse;
    }
  }
  if (!opts.samples.empty()) return calibrate(fp32, opts.samples, opts.method, opts.progress, per_value);
  return calibrate(fp32, calibration_samples(fp32.graph(), opts), opts.method, opts.progress, per_value);
}

void prepare_rounding(CompiledModel& fp32, QuantizeOptions& given, bool every_layer) {
  if (given.rounding == Rounding::nearest || given.rounding_state) return;
  const Graph& g = fp32.graph();
  const QuantizeOptions opts = resolve_layers(g, given);
  std::set<std::string> kept, nodes;
  for (auto& [node, why] : nodes_kept_8bit(g, opts)) kept.insert(node);
  for (const Node* n : quantizable_matmuls(g)) {
    const DType code = node_precision(n->name, opts, kept).weight;  // i8 too: the 8-bit layers gain less, but gain
    if (every_layer || (!opts.keep_fp32.count(n->name) && code != DType::b1)) nodes.insert(n->name);
  }
  auto state = std::make_shared<RoundingState>();
  state->inputs = opts.samples.empty() ? collect_layer_inputs(fp32, calibration_samples(g, opts), nodes)
                                       : collect_layer_inputs(fp32, opts.samples, nodes);
  given.rounding_state = std::move(state);
}

Graph quantize_model(CompiledModel& fp32, const QuantizeOptions& given) {
  QuantizeOptions opts = given;
  const std::vector<Range> ranges = calibrate_model(fp32, opts);
  prepare_rounding(fp32, opts);
  return quantize_graph(fp32.graph(), ranges, opts);
}

}  // namespace lowbit
