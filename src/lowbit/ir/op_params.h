#pragma once
// Resolved geometry of convolution and pooling nodes, computed once from attributes and shapes
// (auto_pad, defaults and group handled here) so that shape inference, reference kernels, fast
// kernels, MAC counting and `explain` all agree.
#include <limits>

#include "lowbit/ir/graph.h"

namespace lowbit {

struct Conv2dParams {
  int64_t N = 1, C = 0, H = 0, W = 0;  // input
  int64_t M = 0, OH = 0, OW = 0;       // output channels and spatial size
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t group = 1;
  bool has_bias = false;
  bool has_residual = false;  // fused Add (input 3)
  // Fused activation as a clamp: Relu = [0, inf), Relu6 = [0, 6].
  float act_min = -std::numeric_limits<float>::infinity();
  float act_max = std::numeric_limits<float>::infinity();
  // Fused activation after the clamp (attribute post_op: an op whose schema says conv_post_op,
  // e.g. SiLU or HardSwish; empty: none), with its alpha / beta when it has them.
  std::string post_op;
  float post_alpha = 0.0f, post_beta = 0.0f;
  // Then a scale and shift by constants (attributes post_scale / post_shift, fuse_epilogues):
  // y = post_op(clamp(...)) * post_scale + post_shift.
  float post_scale = 1.0f, post_shift = 0.0f;
  bool has_post_affine() const { return post_scale != 1.0f || post_shift != 0.0f; }

  int64_t C_per_group() const { return C / group; }
  int64_t M_per_group() const { return M / group; }
  bool is_depthwise() const { return group == C && group == M && group > 1; }
  bool is_pointwise() const {
    return KH == 1 && KW == 1 && SH == 1 && SW == 1 && pad_top == 0 && pad_left == 0 && pad_bottom == 0 &&
           pad_right == 0;
  }
  int64_t macs() const { return N * M * OH * OW * C_per_group() * KH * KW; }
};

// For a Conv node (ONNX Conv plus lowbit's fused attributes act_min/act_max and residual input 3)
// whose input shapes are known. Throws lowbit::Error naming the node on inconsistent geometry.
Conv2dParams conv2d_params(const Graph& g, const Node& n);

struct Pool2dParams {
  int64_t N = 1, C = 0, H = 0, W = 0, OH = 0, OW = 0;
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool count_include_pad = false;  // AveragePool
};

// For MaxPool / AveragePool nodes (ceil_mode and auto_pad resolved).
Pool2dParams pool2d_params(const Graph& g, const Node& n);

// Output size of one spatial axis and the pads that auto_pad implies; shared by conv and pool.
struct AxisGeometry {
  int64_t out, pad_begin, pad_end;
};
AxisGeometry resolve_axis(const std::string& auto_pad, int64_t in, int64_t k, int64_t stride, int64_t dilation,
                          int64_t pad_begin, int64_t pad_end, bool ceil_mode);

}  // namespace lowbit
