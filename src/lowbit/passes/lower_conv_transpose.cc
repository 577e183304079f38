// ConvTranspose whose kernel equals its stride (the 2x2 / 2 upsampling of DBNet and UNet heads)
// has no overlapping taps: output pixel (h b + i, w b + j) of channel m is
// bias[m] + sum_c x[c, h, w] W[c, m, i, j]. That is a 1x1 Conv with M b^2 output channels, channel
// (m b + i) b + j, followed by DepthToSpace (CRD): the conv runs on the tuned GEMM kernels (and
// quantizes to QConv; DepthToSpace moves u8 codes as they are), where the reference ConvTranspose
// ran a scalar loop per output pixel.
#include <string>

#include "lowbit/passes/passes.h"

namespace lowbit {

int lower_conv_transpose(Graph& g) {
  int lowered = 0;
  std::vector<Node> out;
  out.reserve(g.nodes.size());
  for (Node& n : g.nodes) {
    const Tensor* w = n.op == "ConvTranspose" ? g.constant(n.inputs[1]) : nullptr;
    ValueId bias = Graph::input_or_none(n, 2);
    const Tensor* b = bias == kNoValue ? nullptr : g.constant(bias);
    const Attributes& a = n.attrs;
    const bool rank4 = w && w->shape().size() == 4;
    const auto ks = rank4 ? std::vector<int64_t>{w->shape()[2], w->shape()[3]} : std::vector<int64_t>{};
    const bool fits = rank4 && (bias == kNoValue || b) && a.get_int("group", 1) == 1 &&
                      ks[0] == ks[1] && a.get_ints("strides", {1, 1}) == ks &&
                      a.get_ints("dilations", {1, 1}) == std::vector<int64_t>{1, 1} &&
                      a.get_ints("pads", {0, 0, 0, 0}) == std::vector<int64_t>{0, 0, 0, 0} &&
                      a.get_ints("output_padding", {0, 0}) == std::vector<int64_t>{0, 0} &&
                      !a.has("output_shape") && (a.get_string("auto_pad", "NOTSET") == "NOTSET" ||
                                                 a.get_string("auto_pad", "NOTSET") == "VALID") &&
                      ks[0] > 1 && ks[0] <= 16;
    if (!fits) {
      out.push_back(std::move(n));
      continue;
    }
    const int64_t C = w->shape()[0], M = w->shape()[1], k = ks[0];
    Tensor w1(DType::f32, {M * k * k, C, 1, 1});
    for (int64_t c = 0; c < C; ++c)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t i = 0; i < k; ++i)
          for (int64_t j = 0; j < k; ++j)
            w1.data<float>()[((m * k + i) * k + j) * C + c] = w->data<float>()[((c * M + m) * k + i) * k + j];
    // Names made here must also differ from those of the nodes already moved to `out`, which
    // g.unique_name no longer sees: a numbered base for unnamed nodes.
    const std::string base = n.name.empty() ? "conv_transpose_" + std::to_string(lowered) : n.name;
    std::vector<ValueId> in{n.inputs[0], g.add_constant(g.unique_name(base + ".as_conv_weight"), std::move(w1))};
    if (b) {
      Tensor b1(DType::f32, {M * k * k});
      for (int64_t m = 0; m < M; ++m)
        for (int64_t t = 0; t < k * k; ++t) b1.data<float>()[m * k * k + t] = b->data<float>()[m];
      in.push_back(g.add_constant(g.unique_name(base + ".as_conv_bias"), std::move(b1)));
    }
    ValueId t = g.add_value(g.unique_name(base + ".blocks"));
    Attributes ca;
    ca.set("kernel_shape", std::vector<int64_t>{1, 1});
    out.push_back(Node{base + ".as_conv", "Conv", in, {t}, ca});
    Attributes da;
    da.set("blocksize", k);
    da.set("mode", std::string("CRD"));
    out.push_back(Node{base, "DepthToSpace", {t}, n.outputs, da});
    ++lowered;
  }
  g.nodes = std::move(out);
  if (lowered) g.remove_dead();
  return lowered;
}

}  // namespace lowbit
