// Binary convolutions of imported models: Sign(x), QONNX BipolarQuant(x, s) or Where(x < 0, -1, 1)
// feeding a Conv whose weights are +-alpha per output channel become one BinaryConv
// (ir/ops_quant.cc) that reads x itself and takes its sign while packing bits. Runs after BatchNormalization folding: a BN after
// the conv scales each channel's +-alpha to another +-alpha' (its sign, if negative, moves into
// the codes), so the folded weights still qualify. Weights given as Sign(W) or BipolarQuant(W, s)
// of a constant were folded to +-1 / +-s constants before this pass.
//
// One difference from ONNX, stated where it is made: Sign(0) is 0 in ONNX, +1 here (bit-packed
// signs have no zero; Larq and QONNX's BipolarQuant also map 0 to +1). Exact zeros in a real-valued
// input are rare; the Conv's own zero padding is kept exact (pad_value 0, corrected per tap).
#include <cmath>
#include <functional>

#include "lowbit/ir/codes.h"
#include "lowbit/passes/passes.h"

namespace lowbit {
namespace {

// The positive scalar scale of a BipolarQuant, or 0 when it is not one.
float bipolar_scalar_scale(const Graph& g, const Node& n) {
  const Tensor* s = n.inputs.size() == 2 ? g.constant(n.inputs[1]) : nullptr;
  if (!s || s->dtype() != DType::f32 || s->numel() != 1) return 0.0f;
  const float v = s->data<float>()[0];
  return std::isfinite(v) && v > 0.0f ? v : 0.0f;
}

bool is_scalar(const Graph& g, ValueId v, float want) {
  const Tensor* t = v == kNoValue ? nullptr : g.constant(v);
  return t && t->dtype() == DType::f32 && t->numel() == 1 && t->data<float>()[0] == want;
}

// Where(Less(x, 0), -1, +1): the sign with 0 -> +1 in standard ops, as lowbit's QDQ export writes
// BinaryConv (and as hand-written exports spell Larq's sign). Returns x, or kNoValue.
ValueId where_sign_input(const Graph& g, const std::vector<NodeId>& producer, const Node& n) {
  if (n.op != "Where" || n.inputs.size() != 3 || !is_scalar(g, n.inputs[1], -1.0f) || !is_scalar(g, n.inputs[2], 1.0f))
    return kNoValue;
  const NodeId p = producer[static_cast<size_t>(n.inputs[0])];
  if (p < 0) return kNoValue;
  const Node& lt = g.nodes[static_cast<size_t>(p)];
  if (lt.op != "Less" || lt.inputs.size() != 2 || !is_scalar(g, lt.inputs[1], 0.0f)) return kNoValue;
  return lt.inputs[0];
}

// alpha[m] = |W[m, ...]| when every weight of channel m has that one nonzero magnitude (to float
// rounding: 1e-6 relative, as a BN fold computes each product once); empty otherwise.
std::vector<float> binary_magnitudes(const Tensor& w) {
  const int64_t M = w.shape()[0], per = w.numel() / M;
  std::vector<float> alpha(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m) {
    const float* p = w.data<float>() + m * per;
    const float a = std::fabs(p[0]);
    if (!(a > 0.0f) || !std::isfinite(a)) return {};
    for (int64_t k = 1; k < per; ++k)
      if (std::fabs(std::fabs(p[k]) - a) > 1e-6f * a) return {};
    alpha[static_cast<size_t>(m)] = a;
  }
  return alpha;
}

}  // namespace

int binarize_convs(Graph& g) {
  const auto producer = g.producers();
  int rewritten = 0;
  for (Node& n : g.nodes) {
    if (n.op != "Conv" || n.inputs.size() < 2 || n.attrs.get_int("group", 1) != 1) continue;
    const NodeId p = producer[static_cast<size_t>(n.inputs[0])];
    if (p < 0) continue;
    const Node& act = g.nodes[static_cast<size_t>(p)];
    float act_scale = 1.0f;
    ValueId x = act.inputs.empty() ? kNoValue : act.inputs[0];
    if (act.op == "BipolarQuant") act_scale = bipolar_scalar_scale(g, act);
    else if (act.op == "Where") x = where_sign_input(g, producer, act);
    else if (act.op != "Sign") continue;
    if (x == kNoValue || g.value(x).dtype != DType::f32) continue;
    const Tensor* w = g.constant(n.inputs[1]);
    if (!act_scale || !w || w->dtype() != DType::f32 || w->shape().size() != 4) continue;
    const std::vector<float> alpha = binary_magnitudes(*w);
    if (alpha.empty()) continue;
    Tensor codes(DType::b1, w->shape());
    for (int64_t k = 0; k < w->numel(); ++k) store_code(codes.raw(), DType::b1, k, w->data<float>()[k] < 0.0f ? -1 : 1);
    QuantParams q;
    q.axis = 0;
    q.code = DType::b1;
    for (float a : alpha) {
      q.scale.push_back(a * act_scale);
      q.zero_point.push_back(0);
    }
    const ValueId wid = g.add_constant(g.unique_name(g.value(n.inputs[1]).name + ".b1"), std::move(codes));
    g.value(wid).quant = std::move(q);
    n.op = "BinaryConv";
    n.inputs[0] = x;
    n.inputs[1] = wid;
    n.attrs.set("pad_value", int64_t{0});  // the Conv pads the sign's output with 0
    ++rewritten;
  }
  if (rewritten) g.remove_dead();
  return rewritten;
}

int pack_binary_chains(Graph& g) {
  const auto consumers = g.consumers();
  std::vector<char> is_output(g.values.size(), 0);
  for (ValueId o : g.outputs) is_output[static_cast<size_t>(o)] = 1;
  // v may become packed signs if it has readers and every reader takes only its sign: a
  // BinaryConv's input, or a MaxPool whose output in turn qualifies (max and sign commute:
  // sign(max x) = max(sign x), with sign(0) = +1 on both sides). `pools` collects those MaxPools.
  std::function<bool(ValueId, std::vector<NodeId>&)> signs_only = [&](ValueId v, std::vector<NodeId>& pools) {
    const auto& readers = consumers[static_cast<size_t>(v)];
    if (readers.empty() || is_output[static_cast<size_t>(v)]) return false;
    const Shape& s = g.value(v).shape;
    if (s.size() != 4 || s[1] % kSignWordBits != 0) return false;
    for (NodeId r : readers) {
      const Node& n = g.nodes[static_cast<size_t>(r)];
      if (n.op == "BinaryConv") {
        for (size_t i = 1; i < n.inputs.size(); ++i)
          if (n.inputs[i] == v) return false;  // its residual needs the real values
        continue;
      }
      if (n.op == "MaxPool" && n.outputs.size() == 1 && !n.attrs.has("storage_order") &&
          signs_only(n.outputs[0], pools)) {
        pools.push_back(r);
        continue;
      }
      return false;
    }
    return true;
  };
  int packed = 0;
  for (Node& n : g.nodes) {
    if (n.op != "BinaryConv" || n.inputs.size() > 3 || n.attrs.has("act_min") || n.attrs.has("act_max")) continue;
    const ValueId y = n.outputs[0];
    if (g.value(y).dtype != DType::f32) continue;
    std::vector<NodeId> pools;
    if (!signs_only(y, pools)) continue;
    n.attrs.set("out_signs", int64_t{1});
    g.value(y).dtype = DType::b1;
    for (NodeId p : pools) g.value(g.nodes[static_cast<size_t>(p)].outputs[0]).dtype = DType::b1;
    ++packed;
  }
  return packed;
}

}  // namespace lowbit
