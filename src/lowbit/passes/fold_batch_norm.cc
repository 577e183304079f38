#include <cmath>

#include "lowbit/passes/passes.h"

namespace lowbit {
namespace {

bool is_graph_output(const Graph& g, ValueId v) {
  for (ValueId o : g.outputs)
    if (o == v) return true;
  return false;
}

}  // namespace

int fold_batch_norm(Graph& g) {
  auto producer = g.producers();
  auto consumers = g.consumers();
  int folded = 0;
  std::vector<char> erase(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& bn = g.nodes[i];
    if (bn.op != "BatchNormalization" || bn.inputs.size() < 5) continue;
    ValueId x = bn.inputs[0];
    NodeId p = producer[static_cast<size_t>(x)];
    if (p < 0) continue;
    // A lowered ConvTranspose: Conv -> DepthToSpace (CRD) -> BN, BN channel m over conv channels
    // m b^2 .. m b^2 + b^2 - 1 (`group` of them).
    Node* d2s = nullptr;
    int64_t group = 1;
    if (Node& d = g.nodes[static_cast<size_t>(p)]; d.op == "DepthToSpace" && d.attrs.get_string("mode", "DCR") == "CRD" &&
                                                   consumers[static_cast<size_t>(x)].size() == 1 && !is_graph_output(g, x)) {
      d2s = &d;
      group = d.attrs.get_int("blocksize", 1) * d.attrs.get_int("blocksize", 1);
      x = d.inputs[0];
      p = producer[static_cast<size_t>(x)];
      if (p < 0) continue;
    }
    Node& conv = g.nodes[static_cast<size_t>(p)];
    if (conv.op != "Conv" || consumers[static_cast<size_t>(x)].size() != 1 || is_graph_output(g, x)) continue;
    if (conv.attrs.has("act_min") || conv.attrs.has("act_max") || conv.inputs.size() > 3) continue;
    const Tensor* w = g.constant(conv.inputs[1]);
    ValueId bias_id = Graph::input_or_none(conv, 2);
    const Tensor* b = bias_id == kNoValue ? nullptr : g.constant(bias_id);
    const Tensor *scale = g.constant(bn.inputs[1]), *shift = g.constant(bn.inputs[2]),
                 *mean = g.constant(bn.inputs[3]), *var = g.constant(bn.inputs[4]);
    if (!w || (bias_id != kNoValue && !b) || !scale || !shift || !mean || !var) continue;

    float eps = bn.attrs.get_float("epsilon", 1e-5f);
    int64_t M = w->shape()[0], per = w->numel() / M;
    Tensor nw = w->clone();
    Tensor nb(DType::f32, {M});
    if (scale->numel() * group != M) continue;
    for (int64_t m = 0; m < M; ++m) {
      const int64_t c = m / group;  // the BN channel of conv channel m
      float s = scale->data<float>()[c] / std::sqrt(var->data<float>()[c] + eps);
      for (int64_t k = 0; k < per; ++k) nw.data<float>()[m * per + k] *= s;
      float b0 = b ? b->data<float>()[m] : 0.f;
      nb.data<float>()[m] = (b0 - mean->data<float>()[c]) * s + shift->data<float>()[c];
    }
    std::string base = conv.name.empty() ? bn.name : conv.name;
    conv.inputs[1] = g.add_constant(g.unique_name(base + ".folded_weight"), std::move(nw));
    ValueId nbias = g.add_constant(g.unique_name(base + ".folded_bias"), std::move(nb));
    if (conv.inputs.size() < 3) conv.inputs.resize(3, kNoValue);
    conv.inputs[2] = nbias;
    if (d2s) d2s->outputs[0] = bn.outputs[0];  // the conv keeps writing the blocks
    else conv.outputs[0] = bn.outputs[0];
    erase[i] = 1;
    ++folded;
  }
  if (folded) {
    g.erase_nodes(erase);
    g.remove_dead();
  }
  return folded;
}

}  // namespace lowbit
