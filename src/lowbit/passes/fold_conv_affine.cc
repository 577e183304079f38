// Conv -> Mul / Add / Sub / Div by a per-channel constant folds into the conv's weights and bias,
// as BatchNormalization does (fold_batch_norm.cc). PaddleOCR's PP-LCNet backbones put a learnable
// scale and shift (two one-element constants) after every conv: the PP-OCRv4 detector spends two
// full-tensor passes on each of 48 convs, about an eighth of its fp32 time on the Xeon, and its
// quantized graph would keep them as fp32 islands between a DequantizeLinear and a
// QuantizeLinear.
#include <algorithm>
#include <vector>

#include "lowbit/passes/graph_match.h"
#include "lowbit/passes/passes.h"

namespace lowbit {
namespace {

// c's values per output channel of a conv output shaped y ([N, M, H, W]): one value, or M values
// on axis 1 with every other axis 1 (shapes [M, 1, 1], [1, M, 1, 1]). Empty when c is not a
// constant of that form.
std::vector<float> per_channel(const Graph& g, ValueId c, const Shape& y) {
  const Tensor* t = g.constant(c);
  if (!t || t->dtype() != DType::f32 || y.size() < 2) return {};
  const int64_t M = y[1];
  if (t->numel() == 1) return std::vector<float>(static_cast<size_t>(M), t->data<float>()[0]);
  const Shape& s = t->shape();
  if (s.size() > y.size() || t->numel() != M) return {};
  // Right-aligned against y, the one dim that is not 1 must be the channel axis.
  const size_t channel_axis = s.size() - (y.size() - 1);
  if (s.size() < y.size() - 1) return {};
  for (size_t d = 0; d < s.size(); ++d)
    if (d != channel_axis && s[d] != 1) return {};
  return std::vector<float>(t->data<float>(), t->data<float>() + M);
}

}  // namespace

int fold_conv_affine(Graph& g) {
  int folded = 0;
  for (bool changed = true; changed;) {  // Mul then Add: the Add folds once the Mul has
    changed = false;
    auto producer = g.producers();
    auto consumers = g.consumers();
    std::vector<char> erase(g.nodes.size(), 0);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      Node& op = g.nodes[i];
      if ((op.op != "Mul" && op.op != "Add" && op.op != "Sub" && op.op != "Div") || op.inputs.size() != 2 ||
          op.outputs.size() != 1)
        continue;
      // The conv's output on one side (Sub and Div: the left one), the constant on the other.
      for (int side = 0; side < 2; ++side) {
        if (side == 1 && (op.op == "Sub" || op.op == "Div")) break;
        const ValueId x = op.inputs[static_cast<size_t>(side)], c = op.inputs[static_cast<size_t>(1 - side)];
        const NodeId p = producer[static_cast<size_t>(x)];
        if (p < 0 || erase[static_cast<size_t>(p)] || !match::single_use(g, consumers, x)) continue;
        Node& conv = g.nodes[static_cast<size_t>(p)];
        // A conv with a fused clamp, activation or residual no longer ends in its bias.
        if (conv.op != "Conv" || conv.attrs.has("act_min") || conv.attrs.has("act_max") || conv.attrs.has("post_op") ||
            conv.inputs.size() < 2 || conv.inputs.size() > 3 || conv.outputs.size() != 1)
          continue;
        const Tensor* w = g.constant(conv.inputs[1]);
        const ValueId bias_id = Graph::input_or_none(conv, 2);
        const Tensor* b = bias_id == kNoValue ? nullptr : g.constant(bias_id);
        if (!w || w->dtype() != DType::f32 || w->shape().empty() || (bias_id != kNoValue && (!b || b->dtype() != DType::f32)))
          continue;
        if (g.value(x).dtype != DType::f32 || g.value(op.outputs[0]).shape != g.value(x).shape) continue;
        const std::vector<float> k = per_channel(g, c, g.value(x).shape);
        const int64_t M = w->shape()[0], per = w->numel() / M;
        if (k.size() != static_cast<size_t>(M) || (b && b->numel() != M)) continue;
        // x / 0 keeps its infinities where they are.
        if (op.op == "Div" && std::find(k.begin(), k.end(), 0.0f) != k.end()) continue;
        {
          Tensor nw = w->clone();
          Tensor nb(DType::f32, {M});
          for (int64_t m = 0; m < M; ++m) {
            const float kv = k[static_cast<size_t>(m)];
            float bias = b ? b->data<float>()[m] : 0.0f;
            if (op.op == "Mul" || op.op == "Div") {
              const float s = op.op == "Mul" ? kv : 1.0f / kv;
              for (int64_t e = 0; e < per; ++e) nw.data<float>()[m * per + e] *= s;
              bias *= s;
            } else {
              bias = op.op == "Add" ? bias + kv : bias - kv;
            }
            nb.data<float>()[m] = bias;
          }
          const std::string base = conv.name.empty() ? op.name : conv.name;
          if (op.op == "Mul" || op.op == "Div")
            conv.inputs[1] = g.add_constant(g.unique_name(base + ".scaled_weight"), std::move(nw));
          if (conv.inputs.size() < 3) conv.inputs.resize(3, kNoValue);
          conv.inputs[2] = g.add_constant(g.unique_name(base + ".shifted_bias"), std::move(nb));
          conv.outputs[0] = op.outputs[0];
          erase[i] = 1;
          ++folded;
          changed = true;
          break;
        }
      }
    }
    if (changed) {
      g.erase_nodes(erase);
      g.remove_dead();
    }
  }
  return folded;
}

}  // namespace lowbit
