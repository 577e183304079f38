#include "lowbit/ir/op_params.h"

#include <algorithm>
#include <cmath>

#include "lowbit/common/error.h"
#include "lowbit/ir/op_schema.h"

namespace lowbit {
namespace {

[[noreturn]] void fail(const Node& n, const std::string& reason) { throw Error("node " + n.label() + ": " + reason); }

std::string list_str(const std::vector<int64_t>& v) {
  std::string r = "[";
  for (size_t k = 0; k < v.size(); ++k) r += (k ? ", " : "") + std::to_string(v[k]);
  return r + "]";
}

const Shape& input_shape(const Graph& g, const Node& n, size_t i, const char* what) {
  ValueId v = Graph::input_or_none(n, i);
  if (v == kNoValue) fail(n, std::string("missing input ") + std::to_string(i) + " (" + what + ")");
  return g.value(v).shape;
}

// Attribute geometry common to Conv and pooling: 2 values per list (H, W), pads 4 values in ONNX
// order [top, left, bottom, right].
struct Window {
  int64_t SH = 1, SW = 1, DH = 1, DW = 1;
  int64_t pads[4] = {0, 0, 0, 0};
  std::string auto_pad;
};

Window read_window(const Node& n, bool allow_dilations) {
  Window w;
  const Attributes& a = n.attrs;
  auto strides = a.get_ints("strides", {1, 1});
  auto dilations = a.get_ints("dilations", {1, 1});
  auto pads = a.get_ints("pads", {0, 0, 0, 0});
  if (strides.size() != 2) fail(n, "strides " + list_str(strides) + " must have 2 values");
  if (dilations.size() != 2) fail(n, "dilations " + list_str(dilations) + " must have 2 values");
  if (pads.size() != 4) fail(n, "pads " + list_str(pads) + " must have 4 values [top, left, bottom, right]");
  for (int64_t s : strides)
    if (s < 1) fail(n, "strides " + list_str(strides) + " must be >= 1");
  for (int64_t d : dilations)
    if (d < 1) fail(n, "dilations " + list_str(dilations) + " must be >= 1");
  for (int64_t p : pads)
    if (p < 0) fail(n, "pads " + list_str(pads) + " must be >= 0");
  if (!allow_dilations && (dilations[0] != 1 || dilations[1] != 1))
    fail(n, "dilations " + list_str(dilations) + " are not supported for this op");
  w.SH = strides[0];
  w.SW = strides[1];
  w.DH = dilations[0];
  w.DW = dilations[1];
  for (int k = 0; k < 4; ++k) w.pads[k] = pads[static_cast<size_t>(k)];
  w.auto_pad = a.get_string("auto_pad", "NOTSET");
  if (w.auto_pad != "NOTSET" && w.auto_pad != "VALID" && w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER")
    fail(n, "unknown auto_pad '" + w.auto_pad + "'");
  return w;
}

void require_2d(const Node& n, const Shape& x, const char* kind) {
  if (x.size() == 3 || x.size() == 5)
    fail(n, std::string("only 2-D ") + kind + " is supported (input rank " + std::to_string(x.size()) + ")");
  if (x.size() != 4) fail(n, "expects a 4-D NCHW input, got shape " + shape_str(x));
}

// Resolves both spatial axes and checks the output is non-empty.
void resolve_hw(const Node& n, const Window& w, int64_t H, int64_t W, int64_t KH, int64_t KW, bool ceil_mode,
                int64_t& OH, int64_t& OW, int64_t (&pads)[4]) {
  AxisGeometry gh = resolve_axis(w.auto_pad, H, KH, w.SH, w.DH, w.pads[0], w.pads[2], ceil_mode);
  AxisGeometry gw = resolve_axis(w.auto_pad, W, KW, w.SW, w.DW, w.pads[1], w.pads[3], ceil_mode);
  if (gh.out < 1 || gw.out < 1)
    fail(n, "kernel " + std::to_string(KH) + "x" + std::to_string(KW) + " (dilations " + std::to_string(w.DH) + "x" +
                std::to_string(w.DW) + ") does not fit the padded " + std::to_string(H) + "x" + std::to_string(W) +
                " input");
  OH = gh.out;
  OW = gw.out;
  pads[0] = gh.pad_begin;
  pads[1] = gw.pad_begin;
  pads[2] = gh.pad_end;
  pads[3] = gw.pad_end;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

AxisGeometry resolve_axis(const std::string& auto_pad, int64_t in, int64_t k, int64_t stride, int64_t dilation,
                          int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  const int64_t ek = (k - 1) * dilation + 1;  // effective (dilated) kernel extent
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    int64_t out = ceil_div(in, stride);
    int64_t total = std::max<int64_t>(0, (out - 1) * stride + ek - in);
    // SAME_UPPER puts the odd extra pad at the end, SAME_LOWER at the beginning.
    int64_t small = total / 2, large = total - total / 2;
    return auto_pad == "SAME_UPPER" ? AxisGeometry{out, small, large} : AxisGeometry{out, large, small};
  }
  if (auto_pad == "VALID") {
    int64_t span = in - ek;
    return {span < 0 ? 0 : span / stride + 1, 0, 0};
  }
  int64_t span = in + pad_begin + pad_end - ek;
  if (span < 0) return {0, pad_begin, pad_end};
  int64_t out = (ceil_mode ? ceil_div(span, stride) : span / stride) + 1;
  // With ceil_mode a last window that would start inside the end padding is dropped (as in
  // PyTorch and ONNX Runtime): every window must cover at least one input or begin pad element.
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return {out, pad_begin, pad_end};
}

Conv2dParams conv2d_params(const Graph& g, const Node& n) {
  Conv2dParams p;
  const Shape& x = input_shape(g, n, 0, "X");
  const Shape& w = input_shape(g, n, 1, "W");
  require_2d(n, x, "convolution");
  if (w.size() != 4) fail(n, "weight W must have rank 4 [M, C/group, KH, KW], got shape " + shape_str(w));
  p.N = x[0];
  p.C = x[1];
  p.H = x[2];
  p.W = x[3];
  p.M = w[0];
  p.group = n.attrs.get_int("group", 1);
  if (p.group < 1) fail(n, "group " + std::to_string(p.group) + " must be >= 1");
  if (p.C % p.group != 0)
    fail(n, "group " + std::to_string(p.group) + " does not divide the " + std::to_string(p.C) + " input channels");
  if (p.M % p.group != 0)
    fail(n, "group " + std::to_string(p.group) + " does not divide the " + std::to_string(p.M) + " output channels");
  if (w[1] != p.C / p.group)
    fail(n, "weight shape " + shape_str(w) + " does not match " + std::to_string(p.C) + " input channels with group " +
                std::to_string(p.group) + " (expected W[1] = " + std::to_string(p.C / p.group) + ")");
  p.KH = w[2];
  p.KW = w[3];
  if (n.attrs.has("kernel_shape")) {
    auto ks = n.attrs.get_ints("kernel_shape");
    if (ks.size() != 2 || ks[0] != p.KH || ks[1] != p.KW)
      fail(n, "kernel_shape " + list_str(ks) + " does not match weight shape " + shape_str(w));
  }

  Window win = read_window(n, /*allow_dilations=*/true);
  p.SH = win.SH;
  p.SW = win.SW;
  p.DH = win.DH;
  p.DW = win.DW;
  int64_t pads[4];
  resolve_hw(n, win, p.H, p.W, p.KH, p.KW, /*ceil_mode=*/false, p.OH, p.OW, pads);
  p.pad_top = pads[0];
  p.pad_left = pads[1];
  p.pad_bottom = pads[2];
  p.pad_right = pads[3];

  if (Graph::input_or_none(n, 2) != kNoValue) {
    const Shape& b = g.value(n.inputs[2]).shape;
    if (b.size() != 1 || b[0] != p.M)
      fail(n, "bias B must have shape " + std::to_string(p.M) + ", got " + shape_str(b));
    p.has_bias = true;
  }
  if (Graph::input_or_none(n, 3) != kNoValue) {
    const Shape& r = g.value(n.inputs[3]).shape;
    Shape y = {p.N, p.M, p.OH, p.OW};
    if (r != y) fail(n, "residual input must have the output shape " + shape_str(y) + ", got " + shape_str(r));
    p.has_residual = true;
  }
  p.act_min = n.attrs.get_float("act_min", p.act_min);
  p.act_max = n.attrs.get_float("act_max", p.act_max);
  if (!(p.act_min <= p.act_max))
    fail(n, "act_min " + std::to_string(p.act_min) + " exceeds act_max " + std::to_string(p.act_max));
  p.post_op = n.attrs.get_string("post_op", "");
  if (!p.post_op.empty()) {
    if (!conv_post_op(p.post_op))
      fail(n, "post_op '" + p.post_op + "' is not an activation a Conv applies (LeakyRelu, Sigmoid, SiLU, HardSigmoid, "
              "HardSwish)");
    // The op's own defaults (ONNX: LeakyRelu alpha 0.01; HardSigmoid alpha 0.2, beta 0.5).
    p.post_alpha = n.attrs.get_float("post_alpha", p.post_op == "HardSigmoid" ? 0.2f : 0.01f);
    p.post_beta = n.attrs.get_float("post_beta", 0.5f);
  }
  p.post_scale = n.attrs.get_float("post_scale", 1.0f);
  p.post_shift = n.attrs.get_float("post_shift", 0.0f);
  if (!std::isfinite(p.post_scale) || !std::isfinite(p.post_shift))
    fail(n, "post_scale and post_shift must be finite, got " + std::to_string(p.post_scale) + " and " +
            std::to_string(p.post_shift));
  return p;
}

Pool2dParams pool2d_params(const Graph& g, const Node& n) {
  Pool2dParams p;
  const Shape& x = input_shape(g, n, 0, "X");
  require_2d(n, x, "pooling");
  p.N = x[0];
  p.C = x[1];
  p.H = x[2];
  p.W = x[3];
  if (!n.attrs.has("kernel_shape")) fail(n, "kernel_shape attribute is required");
  auto ks = n.attrs.get_ints("kernel_shape");
  if (ks.size() != 2) fail(n, "kernel_shape " + list_str(ks) + " must have 2 values");
  if (ks[0] < 1 || ks[1] < 1) fail(n, "kernel_shape " + list_str(ks) + " must be >= 1");
  p.KH = ks[0];
  p.KW = ks[1];
  // Dilated pooling exists for MaxPool (opset 10) and AveragePool (opset 19).
  Window win = read_window(n, /*allow_dilations=*/true);
  p.SH = win.SH;
  p.SW = win.SW;
  p.DH = win.DH;
  p.DW = win.DW;
  if (n.attrs.get_int("storage_order", 0) != 0) fail(n, "storage_order=1 (column-major indices) is not supported");
  bool ceil_mode = n.attrs.get_int("ceil_mode", 0) != 0;
  int64_t pads[4];
  resolve_hw(n, win, p.H, p.W, p.KH, p.KW, ceil_mode, p.OH, p.OW, pads);
  p.pad_top = pads[0];
  p.pad_left = pads[1];
  p.pad_bottom = pads[2];
  p.pad_right = pads[3];
  // A pad as large as the kernel would produce windows that see only padding.
  if (p.pad_top >= (p.KH - 1) * p.DH + 1 || p.pad_bottom >= (p.KH - 1) * p.DH + 1 ||
      p.pad_left >= (p.KW - 1) * p.DW + 1 || p.pad_right >= (p.KW - 1) * p.DW + 1)
    fail(n, "pads " + list_str({p.pad_top, p.pad_left, p.pad_bottom, p.pad_right}) +
                " must be smaller than the kernel " + list_str(ks));
  p.count_include_pad = n.attrs.get_int("count_include_pad", 0) != 0;
  return p;
}

}  // namespace lowbit
