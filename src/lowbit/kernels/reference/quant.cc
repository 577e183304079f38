// Reference kernels of the quantized ops: lowbit's QConv / QGemm / QAdd (the exact contract of
// notes/quant_ir.md, restated in kernels/qu8-gemm/README.md) and ONNX's QuantizeLinear,
// DequantizeLinear, QLinearConv, QLinearMatMul, ConvInteger and MatMulInteger.
//
// Written for clarity: every fast int8 kernel must reproduce QConv / QGemm / QAdd byte for byte,
// so each step of the epilogue below is spelled out in the order the contract gives it.
// Accumulation is in int64 and then narrowed to int32 modulo 2^32, which is exactly what a SIMD
// int32 accumulator yields (even in the pathological overflow case the kernels' checks exclude).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "lowbit/ir/channel_table.h"
#include "lowbit/ir/codes.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/reference/broadcast.h"
#include "lowbit/kernels/reference/reference.h"

namespace lowbit {
namespace {
using ref::fail;

// Weight storage the quantized matmuls read: int8, or sub-byte codes packed (ir/codes.h).
bool is_weight_storage(DType t) { return t == DType::i8 || t == DType::i4 || t == DType::i2 || t == DType::b1; }
using ref::present;

// ---- the lowbit requantization contract ----

const QuantParams& quant_of(const Graph& g, const Node& n, ValueId v, const char* what) {
  const Value& val = g.value(v);
  if (!val.quant || val.quant->scale.empty() || val.quant->zero_point.size() != val.quant->scale.size())
    fail(n, std::string(what) + " '" + val.name + "' has no quantization parameters");
  return *val.quant;
}

float scale_at(const QuantParams& q, int64_t i) { return q.scale.size() == 1 ? q.scale[0] : q.scale.at(size_t(i)); }

// Integer output range [lo, hi] of the fused activation clamp within the output's code range
// (u8: [0, 255]; u4 codes: [0, 15]; u2: [0, 3]).
struct QClamp {
  int32_t lo = 0, hi = 0;
};

int32_t clamp_bound(float act, float s_y, int32_t zp_y, CodeRange range, int32_t absent) {
  if (!std::isfinite(act)) return absent;
  float r = std::nearbyintf(act / s_y);
  r = std::min(std::max(r, -1e6f), 1e6f);  // keeps the int conversion defined; no effect on the code range
  return std::clamp(static_cast<int32_t>(r) + zp_y, range.lo, range.hi);
}

QClamp qclamp(float act_min, float act_max, float s_y, int32_t zp_y, CodeRange range) {
  return {clamp_bound(act_min, s_y, zp_y, range, range.lo), clamp_bound(act_max, s_y, zp_y, range, range.hi)};
}

// q = int(nearbyintf(t)) + zp_y, clamped to [lo, hi]. The float clamp before the conversion only
// defines what |t| > 2^31 does; it changes no result.
uint8_t requant(float t, int32_t zp_y, QClamp c) {
  float r = std::nearbyintf(t);
  r = std::min(std::max(r, -1e6f), 1e6f);
  return static_cast<uint8_t>(std::clamp(static_cast<int32_t>(r) + zp_y, c.lo, c.hi));
}

float act_attr(const Node& n, const char* name, float def) { return n.attrs.get_float(name, def); }

// ---- integer convolution shared by QConv, QLinearConv and ConvInteger ----

struct ConvGeom {
  int64_t N, C, H, W, M, KH, KW, SH, SW, DH, DW, pad_top, pad_left, OH, OW, group;
};

ConvGeom geom_of(const Conv2dParams& p) {
  return {p.N, p.C, p.H, p.W, p.M, p.KH, p.KW, p.SH, p.SW, p.DH, p.DW, p.pad_top, p.pad_left, p.OH, p.OW, p.group};
}

// Geometry of an ONNX conv whose X / W are not inputs 0 / 1 (QLinearConv).
ConvGeom geom_from_attrs(const Node& n, const Shape& x, const Shape& w) {
  if (x.size() != 4 || w.size() != 4) fail(n, "reference kernel supports 2-D convolution only");
  const Attributes& a = n.attrs;
  auto strides = a.get_ints("strides", {1, 1});
  auto dil = a.get_ints("dilations", {1, 1});
  auto pads = a.get_ints("pads", {0, 0, 0, 0});
  std::string ap = a.get_string("auto_pad", "NOTSET");
  AxisGeometry gh = resolve_axis(ap, x[2], w[2], strides[0], dil[0], pads[0], pads[2], false);
  AxisGeometry gw = resolve_axis(ap, x[3], w[3], strides[1], dil[1], pads[1], pads[3], false);
  return {x[0], x[1], x[2], x[3], w[0], w[2], w[3], strides[0], strides[1], dil[0], dil[1],
          gh.pad_begin, gw.pad_begin, gh.out, gw.out, a.get_int("group", 1)};
}

// acc[n][m][oh][ow] = sum_{c,kh,kw} xv(n, c, ih, iw) * wv(m, c, kh, kw) over in-bounds taps;
// padding contributes 0 (callers pass zero-point-subtracted values).
template <class XF, class WF>
std::vector<int32_t> conv_acc(const ConvGeom& p, XF xv, WF wv) {
  const int64_t Cg = p.C / p.group, Mg = p.M / p.group;
  std::vector<int32_t> acc(static_cast<size_t>(p.N * p.M * p.OH * p.OW));
  size_t o = 0;
  for (int64_t b = 0; b < p.N; ++b)
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t oh = 0; oh < p.OH; ++oh)
        for (int64_t ow = 0; ow < p.OW; ++ow) {
          int64_t s = 0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < p.KH; ++kh) {
              const int64_t ih = oh * p.SH - p.pad_top + kh * p.DH;
              if (ih < 0 || ih >= p.H) continue;
              for (int64_t kw = 0; kw < p.KW; ++kw) {
                const int64_t iw = ow * p.SW - p.pad_left + kw * p.DW;
                if (iw < 0 || iw >= p.W) continue;
                const int64_t xi = ((b * p.C + (m / Mg) * Cg + c) * p.H + ih) * p.W + iw;
                const int64_t wi = ((m * Cg + c) * p.KH + kh) * p.KW + kw;
                s += int64_t{xv(xi)} * wv(m, wi);
              }
            }
          acc[o++] = static_cast<int32_t>(s);  // modulo 2^32, as an int32 accumulator
        }
  return acc;
}

// ---- QConv ----

// The conv epilogue of the int8 contract: y = requant(fmaf(acc, s_x * s_w[m] / s_y, B[m] / s_y),
// then + (r - zp_r) * s_r / s_y, clamped to act_min / act_max in the output's code range. QConv
// passes its input's scale; BinaryConv passes 1 (its products are of signs).
void requant_conv(const Graph& g, const Node& n, const Conv2dParams& p, const std::vector<int32_t>& acc, double s_x,
                  const QuantParams& qw, const float* bias, const uint8_t* r, uint8_t* y) {
  const QuantParams& qy = quant_of(g, n, n.outputs[0], "output");
  const int32_t zp_y = qy.zero_point[0];
  const float s_y = qy.scale[0];
  std::vector<float> req_scale(static_cast<size_t>(p.M)), req_bias(static_cast<size_t>(p.M), 0.0f);
  for (int64_t m = 0; m < p.M; ++m) {
    req_scale[size_t(m)] = static_cast<float>(s_x * scale_at(qw, m) / s_y);  // (per-channel weights)
    if (bias) req_bias[size_t(m)] = static_cast<float>(double(bias[m]) / s_y);
  }
  float res_scale = 0.0f;
  int32_t zp_r = 0;
  if (r) {
    const QuantParams& qr = quant_of(g, n, n.inputs[3], "residual");
    res_scale = static_cast<float>(double(qr.scale[0]) / s_y);
    zp_r = qr.zero_point[0];
  }
  const QClamp c = qclamp(p.act_min, p.act_max, s_y, zp_y, code_range(g.value(n.outputs[0])));
  const int64_t plane = p.OH * p.OW;
  for (int64_t i = 0; i < p.N * p.M * plane; ++i) {
    const size_t m = size_t((i / plane) % p.M);
    float t = std::fmaf(static_cast<float>(acc[size_t(i)]), req_scale[m], req_bias[m]);
    if (r) t = std::fmaf(static_cast<float>(int32_t{r[i]} - zp_r), res_scale, t);
    y[i] = requant(t, zp_y, c);
  }
}

// Group-wise weights (QuantParams::block_size): an integer sum per block of input channels and tap,
// each scaled on its own, in the order of the fast kernels' K (tap-major: taps outer, blocks of
// input channels inner), starting from the bias:
//   t = B[m] / s_y;  for tap, block: t = fmaf(float(acc[tap][block]), s_x * s_w[m][block][tap] / s_y, t)
// (an int32 sum per group, modulo 2^32 as every accumulator), then the residual and the clamp as
// for per-channel scales: with one group this is the per-channel contract exactly.
void qconv_grouped(const Graph& g, const Node& n, const Conv2dParams& p, const uint8_t* x, int32_t zp_x, double s_x,
                   const void* w, DType wt, const QuantParams& qw, const float* bias, const uint8_t* r, uint8_t* y) {
  const QuantParams& qy = quant_of(g, n, n.outputs[0], "output");
  const int32_t zp_y = qy.zero_point[0];
  const float s_y = qy.scale[0];
  const int64_t Cg = p.C_per_group(), Mg = p.M_per_group(), taps = p.KH * p.KW;
  const WeightGroups wg = weight_groups({p.M, Cg, p.KH, p.KW}, qw.block_size);
  if (static_cast<int64_t>(qw.scale.size()) != wg.count()) fail(n, "group-wise weight scales do not match the weights");
  std::vector<float> gscale(static_cast<size_t>(wg.count()));
  for (size_t i = 0; i < gscale.size(); ++i) gscale[i] = static_cast<float>(s_x * qw.scale[i] / s_y);
  float res_scale = 0.0f;
  int32_t zp_r = 0;
  if (r) {
    const QuantParams& qr = quant_of(g, n, n.inputs[3], "residual");
    res_scale = static_cast<float>(double(qr.scale[0]) / s_y);
    zp_r = qr.zero_point[0];
  }
  const QClamp c = qclamp(p.act_min, p.act_max, s_y, zp_y, code_range(g.value(n.outputs[0])));
  size_t o = 0;
  for (int64_t b = 0; b < p.N; ++b)
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t oh = 0; oh < p.OH; ++oh)
        for (int64_t ow = 0; ow < p.OW; ++ow, ++o) {
          float t = bias ? static_cast<float>(double(bias[m]) / s_y) : 0.0f;
          for (int64_t tap = 0; tap < taps; ++tap) {
            const int64_t kh = tap / p.KW, kw = tap % p.KW;
            const int64_t ih = oh * p.SH - p.pad_top + kh * p.DH, iw = ow * p.SW - p.pad_left + kw * p.DW;
            const bool inside = ih >= 0 && ih < p.H && iw >= 0 && iw < p.W;
            for (int64_t c0 = 0; c0 < Cg; c0 += wg.block) {
              int64_t sum = 0;
              if (inside)
                for (int64_t ci = c0; ci < std::min(Cg, c0 + wg.block); ++ci) {
                  const int64_t xi = ((b * p.C + (m / Mg) * Cg + ci) * p.H + ih) * p.W + iw;
                  sum += (int64_t{x[xi]} - zp_x) * load_code(w, wt, (m * Cg + ci) * taps + tap);
                }
              t = std::fmaf(static_cast<float>(static_cast<int32_t>(sum)), gscale[size_t(wg.index(m, c0, tap))], t);
            }
          }
          if (r) t = std::fmaf(static_cast<float>(int32_t{r[o]} - zp_r), res_scale, t);
          y[o] = requant(t, zp_y, c);
        }
}

void qconv(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  if (in[0].dtype != DType::u8 || !is_weight_storage(in[1].dtype) || out[0].dtype != DType::u8)
    fail(n, "QConv reference expects u8 input, i8 / i4 / i2 / b1 weights and u8 output");
  const Conv2dParams p = conv2d_params(g, n);
  const QuantParams& qx = quant_of(g, n, n.inputs[0], "input");
  const QuantParams& qw = quant_of(g, n, n.inputs[1], "weight");
  if (qw.block_size > 0)
    return qconv_grouped(g, n, p, in[0].as<uint8_t>(), qx.zero_point[0], qx.scale[0], in[1].data, in[1].dtype, qw,
                         present(in, 2) ? in[2].as<float>() : nullptr, present(in, 3) ? in[3].as<uint8_t>() : nullptr,
                         out[0].as<uint8_t>());
  const uint8_t* x = in[0].as<uint8_t>();
  const void* w = in[1].data;
  const DType wt = in[1].dtype;
  const float* bias = present(in, 2) ? in[2].as<float>() : nullptr;
  const uint8_t* r = present(in, 3) ? in[3].as<uint8_t>() : nullptr;
  uint8_t* y = out[0].as<uint8_t>();
  const int32_t zp_x = qx.zero_point[0];

  const std::vector<int32_t> acc =
      conv_acc(geom_of(p), [&](int64_t i) { return int32_t{x[i]} - zp_x; }, [&](int64_t, int64_t i) { return load_code(w, wt, i); });

  requant_conv(g, n, p, acc, qx.scale[0], qw, bias, r, y);
}

// ---- QGemm: y[M, N] = A[M, K] x W[N, K]^T ----

void qgemm(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  if (in[0].dtype != DType::u8 || !is_weight_storage(in[1].dtype)) fail(n, "QGemm reference expects u8 A and i8 / i4 / i2 / b1 B");
  const int64_t M = in[0].shape[0], K = in[0].shape[1], N = in[1].shape[0];
  const QuantParams& qx = quant_of(g, n, n.inputs[0], "input");
  const QuantParams& qw = quant_of(g, n, n.inputs[1], "weight");
  const uint8_t* a = in[0].as<uint8_t>();
  const void* w = in[1].data;
  const DType wt = in[1].dtype;
  const float* bias = present(in, 2) ? in[2].as<float>() : nullptr;
  const int32_t zp_x = qx.zero_point[0];
  const float act_min = act_attr(n, "act_min", -INFINITY), act_max = act_attr(n, "act_max", INFINITY);
  const bool f32_out = out[0].dtype == DType::f32;

  std::vector<float> req_scale(static_cast<size_t>(N)), req_bias(static_cast<size_t>(N), 0.0f);
  float s_y = 1.0f;
  int32_t zp_y = 0;
  QClamp c;
  if (!f32_out) {
    const QuantParams& qy = quant_of(g, n, n.outputs[0], "output");
    s_y = qy.scale[0];
    zp_y = qy.zero_point[0];
    c = qclamp(act_min, act_max, s_y, zp_y, code_range(g.value(n.outputs[0])));
  }
  for (int64_t j = 0; j < N; ++j) {
    if (f32_out) {
      req_scale[size_t(j)] = static_cast<float>(double(qx.scale[0]) * scale_at(qw, j));
      if (bias) req_bias[size_t(j)] = bias[j];
    } else {
      req_scale[size_t(j)] = static_cast<float>(double(qx.scale[0]) * scale_at(qw, j) / s_y);
      if (bias) req_bias[size_t(j)] = static_cast<float>(double(bias[j]) / s_y);
    }
  }
  // Group-wise weights: an int32 sum per block of K, each scaled on its own (as QConv's).
  const int64_t block = qw.block_size > 0 ? qw.block_size : std::max<int64_t>(K, 1);
  const WeightGroups wg = weight_groups({N, K}, qw.block_size);
  if (qw.block_size > 0 && static_cast<int64_t>(qw.scale.size()) != wg.count())
    fail(n, "group-wise weight scales do not match the weights");
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float t = req_bias[size_t(j)];
      for (int64_t k0 = 0; k0 < std::max<int64_t>(K, 1); k0 += block) {
        int64_t s = 0;
        for (int64_t k = k0; k < std::min(K, k0 + block); ++k) s += (int64_t{a[i * K + k]} - zp_x) * load_code(w, wt, j * K + k);
        float sc = req_scale[size_t(j)];
        if (qw.block_size > 0) {
          const double sw = qw.scale[size_t(wg.index(j, k0, 0))];
          sc = f32_out ? static_cast<float>(double(qx.scale[0]) * sw) : static_cast<float>(double(qx.scale[0]) * sw / s_y);
        }
        t = std::fmaf(static_cast<float>(static_cast<int32_t>(s)), sc, t);
      }
      if (f32_out)
        out[0].as<float>()[i * N + j] = std::min(std::max(t, act_min), act_max);
      else
        out[0].as<uint8_t>()[i * N + j] = requant(t, zp_y, c);
    }
}

// ---- QAdd ----

void qadd(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  if (in[0].dtype != DType::u8 || in[1].dtype != DType::u8) fail(n, "QAdd reference expects u8 inputs");
  const QuantParams& qa = quant_of(g, n, n.inputs[0], "A");
  const QuantParams& qb = quant_of(g, n, n.inputs[1], "B");
  const QuantParams& qy = quant_of(g, n, n.outputs[0], "output");
  const float s_y = qy.scale[0];
  const float sa = qa.scale[0] / s_y, sb = qb.scale[0] / s_y;
  const int32_t zp_a = qa.zero_point[0], zp_b = qb.zero_point[0], zp_y = qy.zero_point[0];
  const QClamp c = qclamp(act_attr(n, "act_min", -INFINITY), act_attr(n, "act_max", INFINITY), s_y, zp_y,
                          code_range(g.value(n.outputs[0])));
  const uint8_t* a = in[0].as<uint8_t>();
  const uint8_t* b = in[1].as<uint8_t>();
  uint8_t* y = out[0].as<uint8_t>();
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    const float tb = static_cast<float>(int32_t{b[i]} - zp_b) * sb;
    y[i] = requant(std::fmaf(static_cast<float>(int32_t{a[i]} - zp_a), sa, tb), zp_y, c);
  }
}

// ---- QMul ----

// m = (s_a * s_b) / s_y; per element of B, k = float(b - zp_b) * m; then
// y = requant(float(a - zp_a) * k). B is A's shape or its leading dims then ones: each B element
// scales `inner` consecutive elements of A.
void qmul(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  if (in[0].dtype != DType::u8 || in[1].dtype != DType::u8) fail(n, "QMul reference expects u8 inputs");
  const QuantParams& qa = quant_of(g, n, n.inputs[0], "A");
  const QuantParams& qb = quant_of(g, n, n.inputs[1], "B");
  const QuantParams& qy = quant_of(g, n, n.outputs[0], "output");
  const float s_y = qy.scale[0], m = qa.scale[0] * qb.scale[0] / s_y;
  const int32_t zp_a = qa.zero_point[0], zp_b = qb.zero_point[0], zp_y = qy.zero_point[0];
  const QClamp c = qclamp(act_attr(n, "act_min", -INFINITY), act_attr(n, "act_max", INFINITY), s_y, zp_y,
                          code_range(g.value(n.outputs[0])));
  const int64_t inner = out[0].numel() / in[1].numel();
  const uint8_t* a = in[0].as<uint8_t>();
  const uint8_t* b = in[1].as<uint8_t>();
  uint8_t* y = out[0].as<uint8_t>();
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    const float k = static_cast<float>(int32_t{b[i / inner]} - zp_b) * m;
    y[i] = requant(static_cast<float>(int32_t{a[i]} - zp_a) * k, zp_y, c);
  }
}

// ---- QLut ----

// y = T[x]; for a per-channel map, y[n, c, ...] = T_c[x[n, c, ...]] with the tables derived from
// the op's constants (ir/channel_table.h).
void qlut(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  const Shape& xs = in[0].shape;
  uint8_t* y = out[0].as<uint8_t>();
  const uint8_t* x = in[0].as<uint8_t>();
  if (channel_map(n.attrs.get_string("op", ""))) {
    if (in[0].dtype != DType::u8) fail(n, "QLut reference expects u8 input");
    const std::vector<uint8_t> t = channel_table(g, n);
    int64_t inner = 1;
    for (size_t d = 2; d < xs.size(); ++d) inner *= xs[d];
    for (int64_t i = 0; i < out[0].numel(); ++i) y[i] = t[static_cast<size_t>((i / inner) % xs[1] * 256 + x[i])];
    return;
  }
  if (in[0].dtype != DType::u8 || in[1].dtype != DType::u8 || in[1].numel() != 256)
    fail(n, "QLut reference expects u8 input and a 256-entry u8 table");
  const uint8_t* t = in[1].as<uint8_t>();
  for (int64_t i = 0; i < out[0].numel(); ++i) y[i] = t[x[i]];
}

// ---- ONNX QuantizeLinear / DequantizeLinear ----

// Index into a per-tensor (1 value) or per-axis scale for element i of a tensor of shape s.
// Element i of x -> its scale / zero point: per tensor, per axis, or (opset 21's block_size > 0)
// blocked along the axis: the scale tensor has x's shape with that axis ceil-divided by the block.
struct AxisIndex {
  int64_t inner = 1, count = 1, block = 0, blocks = 1;
  bool per_axis = false;
  int64_t operator()(int64_t i) const {
    if (!per_axis) return 0;
    if (block == 0) return (i / inner) % count;
    const int64_t outer = i / (inner * count), a = (i / inner) % count, in = i % inner;
    return (outer * blocks + a / block) * inner + in;
  }
};

AxisIndex axis_index(const Node& n, const Shape& x, const TensorView& scale) {
  AxisIndex ix;
  const int64_t block = n.attrs.get_int("block_size", 0);
  if (scale.numel() == 1 && block == 0) return ix;
  const int64_t axis = ref::norm_axis(n, n.attrs.get_int("axis", 1), static_cast<int64_t>(x.size()));
  ix.per_axis = true;
  ix.count = x[size_t(axis)];
  for (size_t d = size_t(axis) + 1; d < x.size(); ++d) ix.inner *= x[d];
  if (block > 0) {
    ix.block = block;
    ix.blocks = (ix.count + block - 1) / block;
  }
  return ix;
}

void quantize_linear(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  const TensorView& x = in[0];
  const float* scale = in[1].as<float>();
  const AxisIndex ix = axis_index(n, x.shape, in[1]);
  const DType t = out[0].dtype;
  if (!is_code_dtype(t) || t == DType::b1 || t == DType::u1)
    fail(n, std::string("QuantizeLinear to ") + dtype_name(t) + " is not supported");
  // The output's code range: its dtype's, or narrower codes in u8 / i8 storage (4-bit activations).
  const CodeRange range = code_range(g.value(n.outputs[0]));
  const int64_t lo = range.lo, hi = range.hi;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t a = ix(i);
    const int64_t zp = present(in, 2) ? ref::view_int(in[2], a) : 0;
    const float v = x.dtype == DType::f32 ? x.as<float>()[i] : static_cast<float>(x.as<int32_t>()[i]);
    float r = std::nearbyintf(v / scale[a]);
    // inf saturates; NaN gives the lowest code, as the SIMD kernels' cvtps2dq (0x80000000) does.
    // (std::max / std::min pass a NaN through, and its cast to an integer is undefined: clang's UBSan.)
    r = r != r ? -1e9f : std::min(std::max(r, -1e9f), 1e9f);
    const int64_t q = std::clamp(static_cast<int64_t>(r) + zp, lo, hi);
    if (t == DType::u8) out[0].as<uint8_t>()[i] = static_cast<uint8_t>(q);
    else if (t == DType::i8) out[0].as<int8_t>()[i] = static_cast<int8_t>(q);
    else store_code(out[0].data, t, i, static_cast<int32_t>(q));  // ONNX's packed INT4 / UINT2 / ...
  }
}

void dequantize_linear(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  const TensorView& x = in[0];
  const float* scale = in[1].as<float>();
  const AxisIndex ix = axis_index(n, x.shape, in[1]);
  float* y = out[0].as<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t a = ix(i);
    const int64_t zp = present(in, 2) ? ref::view_int(in[2], a) : 0;
    y[i] = static_cast<float>(ref::view_int(x, i) - zp) * scale[a];
  }
}

// ---- ONNX QLinearConv / ConvInteger ----

// ONNX's reference: real-valued rescale of the int32 result, rint (half to even), saturate.
void store_saturated(const TensorView& y, int64_t i, double v) {
  const DTypeInfo& d = dtype_info(y.dtype);
  const double lo = static_cast<double>(d.qmin), hi = static_cast<double>(d.qmax);
  const double q = std::clamp(std::nearbyint(v), lo, hi);
  if (y.dtype == DType::u8) y.as<uint8_t>()[i] = static_cast<uint8_t>(q);
  else y.as<int8_t>()[i] = static_cast<int8_t>(q);
}

void qlinear_conv(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  // x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B
  const ConvGeom p = geom_from_attrs(n, in[0].shape, in[3].shape);
  const int64_t xzp = ref::view_int(in[2], 0);
  const int64_t per_m = in[5].numel();
  const std::vector<int32_t> acc = conv_acc(
      p, [&](int64_t i) { return static_cast<int32_t>(ref::view_int(in[0], i) - xzp); },
      [&](int64_t m, int64_t i) { return static_cast<int32_t>(ref::view_int(in[3], i) - ref::view_int(in[5], per_m == 1 ? 0 : m)); });
  const double xs = in[1].as<float>()[0], ys = in[6].as<float>()[0];
  const double yzp = static_cast<double>(ref::view_int(in[7], 0));
  const int64_t plane = p.OH * p.OW;
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    const int64_t m = (i / plane) % p.M;
    const double ws = in[4].as<float>()[in[4].numel() == 1 ? 0 : m];
    const int64_t b = present(in, 8) ? in[8].as<int32_t>()[m] : 0;
    store_saturated(out[0], i, double(int64_t{acc[size_t(i)]} + b) * (xs * ws / ys) + yzp);
  }
}

void conv_integer(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  // x, w, x_zp, w_zp (w_zp scalar or per output channel)
  const ConvGeom p = geom_from_attrs(n, in[0].shape, in[1].shape);
  const int64_t xzp = present(in, 2) ? ref::view_int(in[2], 0) : 0;
  const bool wzp = present(in, 3);
  const int64_t per_m = wzp ? in[3].numel() : 1;
  const std::vector<int32_t> acc = conv_acc(
      p, [&](int64_t i) { return static_cast<int32_t>(ref::view_int(in[0], i) - xzp); },
      [&](int64_t m, int64_t i) {
        return static_cast<int32_t>(ref::view_int(in[1], i) - (wzp ? ref::view_int(in[3], per_m == 1 ? 0 : m) : 0));
      });
  std::copy(acc.begin(), acc.end(), out[0].as<int32_t>());
}

// ---- ONNX QLinearMatMul / MatMulInteger (numpy matmul with broadcast batch dims) ----

// Calls f(a_off, b_off, y_off, Mr, K, Nc) for every matrix of a broadcast batched matmul, with
// 1-D operands promoted as numpy does.
template <class F>
void for_each_matmul(const Shape& as, const Shape& bs, const Shape& ys, F f) {
  Shape a = as, b = bs;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const int64_t Mr = a[a.size() - 2], K = a.back(), Nc = b.back();
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape batch = ref::broadcast_shape(ab, bb);
  if (batch.empty()) batch = {1};
  if (ab.empty()) ab = {1};
  if (bb.empty()) bb = {1};
  const Shape sa = ref::broadcast_strides(ab, batch), sb = ref::broadcast_strides(bb, batch);
  const int64_t nb = num_elements(batch);
  for (int64_t i = 0; i < nb; ++i) {
    int64_t rem = i, oa = 0, ob = 0;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      oa += idx * sa[d];
      ob += idx * sb[d];
    }
    f(oa * Mr * K, ob * K * Nc, i * Mr * Nc, Mr, K, Nc);
  }
}

// Zero point / scale of a matmul operand: scalar, or 1-D along rows of A (`rows`) / columns of B.
int64_t zp_at(std::span<const TensorView> in, size_t i, int64_t idx) {
  if (!present(in, i)) return 0;
  return ref::view_int(in[i], in[i].numel() == 1 ? 0 : idx);
}

template <class Out>
void int_matmul(std::span<const TensorView> in, size_t ai, size_t bi, size_t azp, size_t bzp, const Shape& ys,
                Out out) {
  for_each_matmul(in[ai].shape, in[bi].shape, ys, [&](int64_t oa, int64_t ob, int64_t oy, int64_t Mr, int64_t K,
                                                      int64_t Nc) {
    for (int64_t r = 0; r < Mr; ++r)
      for (int64_t c = 0; c < Nc; ++c) {
        int64_t s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += (ref::view_int(in[ai], oa + r * K + k) - zp_at(in, azp, r)) *
               (ref::view_int(in[bi], ob + k * Nc + c) - zp_at(in, bzp, c));
        out(oy + r * Nc + c, r, c, static_cast<int32_t>(s));
      }
  });
}

void qlinear_matmul(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  // a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp
  const double ys = in[6].as<float>()[0], yzp = static_cast<double>(ref::view_int(in[7], 0));
  int_matmul(in, 0, 3, 2, 5, out[0].shape, [&](int64_t i, int64_t r, int64_t c, int32_t acc) {
    const double as = in[1].as<float>()[in[1].numel() == 1 ? 0 : r];
    const double bs = in[4].as<float>()[in[4].numel() == 1 ? 0 : c];
    store_saturated(out[0], i, double(acc) * (as * bs / ys) + yzp);
  });
}

void matmul_integer(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  int32_t* y = out[0].as<int32_t>();
  int_matmul(in, 0, 1, 2, 3, out[0].shape, [&](int64_t i, int64_t, int64_t, int32_t acc) { y[i] = acc; });
}

// ---- BinaryConv and BipolarQuant (binary models, ir/ops_quant.cc) ----

// y = alpha[m] * sum_taps sign(x) * w + B[m] (+ residual), every tap spelled out: a tap outside
// the input holds pad_value (0, +1 or -1). sign(x) is -1 below 0 (u8: below the zero point), else
// +1. The f32 epilogue is fmaf(D, alpha, B), + residual, then the act_min / act_max clamp; the u8
// one is QConv's requantization with the signs' scale 1 (the contract the fast kernels match).
void binary_conv(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  const bool q = in[0].dtype == DType::u8, packed_in = in[0].dtype == DType::b1, signs_out = out[0].dtype == DType::b1;
  if ((!q && !packed_in && in[0].dtype != DType::f32) || in[1].dtype != DType::b1 ||
      (out[0].dtype != in[0].dtype && !signs_out && !packed_in))
    fail(n, "BinaryConv reference expects f32, u8 or b1 input, f32, u8 or b1 output and b1 weights");
  const Conv2dParams p = conv2d_params(g, n);
  const QuantParams& qw = quant_of(g, n, n.inputs[1], "weight");
  const int32_t zp_x = q ? quant_of(g, n, n.inputs[0], "input").zero_point[0] : 0;
  const int32_t pad = static_cast<int32_t>(n.attrs.get_int("pad_value", 0));
  const float* bias = present(in, 2) ? in[2].as<float>() : nullptr;
  auto sign_at = [&](int64_t b, int64_t c, int64_t h, int64_t w) -> int32_t {
    if (packed_in) return load_packed_sign(in[0].data, p.C, p.H, p.W, b, c, h, w);
    const int64_t i = ((b * p.C + c) * p.H + h) * p.W + w;
    if (q) return int32_t{in[0].as<uint8_t>()[i]} < zp_x ? -1 : 1;
    return in[0].as<float>()[i] < 0.0f ? -1 : 1;
  };
  std::vector<int32_t> acc(static_cast<size_t>(p.N * p.M * p.OH * p.OW));
  size_t o = 0;
  for (int64_t b = 0; b < p.N; ++b)
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t oh = 0; oh < p.OH; ++oh)
        for (int64_t ow = 0; ow < p.OW; ++ow) {
          int64_t sum = 0;
          for (int64_t c = 0; c < p.C; ++c)
            for (int64_t kh = 0; kh < p.KH; ++kh)
              for (int64_t kw = 0; kw < p.KW; ++kw) {
                const int64_t ih = oh * p.SH - p.pad_top + kh * p.DH, iw = ow * p.SW - p.pad_left + kw * p.DW;
                const bool inside = ih >= 0 && ih < p.H && iw >= 0 && iw < p.W;
                const int32_t v = inside ? sign_at(b, c, ih, iw) : pad;
                sum += v * load_code(in[1].data, DType::b1, ((m * p.C + c) * p.KH + kh) * p.KW + kw);
              }
          acc[o++] = static_cast<int32_t>(sum);
        }
  const int64_t plane = p.OH * p.OW;
  if (signs_out) {  // the sign of the f32 epilogue's value, packed (no residual, no clamp: validated)
    for (int64_t i = 0; i < p.N * p.M * plane; ++i) {
      const int64_t m = (i / plane) % p.M, b = i / (p.M * plane), oh = (i % plane) / p.OW, ow = i % p.OW;
      const float t = std::fmaf(static_cast<float>(acc[size_t(i)]), scale_at(qw, m), bias ? bias[m] : 0.0f);
      store_packed_sign(out[0].data, p.M, p.OH, p.OW, b, m, oh, ow, t < 0.0f ? -1 : 1);
    }
    return;
  }
  if (out[0].dtype == DType::f32) {
    const float* r = present(in, 3) ? in[3].as<float>() : nullptr;
    float* y = out[0].as<float>();
    for (int64_t i = 0; i < p.N * p.M * plane; ++i) {
      const int64_t m = (i / plane) % p.M;
      float t = std::fmaf(static_cast<float>(acc[size_t(i)]), scale_at(qw, m), bias ? bias[m] : 0.0f);
      if (r) t += r[i];
      y[i] = std::min(std::max(t, p.act_min), p.act_max);
    }
    return;
  }
  requant_conv(g, n, p, acc, 1.0, qw, bias, present(in, 3) ? in[3].as<uint8_t>() : nullptr, out[0].as<uint8_t>());
}

// QONNX BipolarQuant: y = (x >= 0 ? 1 : -1) * scale (scale broadcast).
void bipolar_quant(const Graph&, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  if (in[0].dtype != DType::f32 || in[1].dtype != DType::f32) fail(n, "BipolarQuant reference expects f32");
  const float *x = in[0].as<float>(), *s = in[1].as<float>();
  float* y = out[0].as<float>();
  ref::for_each_broadcast<2>(out[0].shape, {in[0].shape, in[1].shape}, [&](int64_t o, const std::array<int64_t, 2>& off) {
    y[o] = (x[off[0]] >= 0.0f ? 1.0f : -1.0f) * s[off[1]];
  });
}

const ReferenceRegistrar kBinaryConv("BinaryConv", binary_conv);
const ReferenceRegistrar kBipolarQuant("BipolarQuant", bipolar_quant);
const ReferenceRegistrar kQConv("QConv", qconv);
const ReferenceRegistrar kQGemm("QGemm", qgemm);
const ReferenceRegistrar kQAdd("QAdd", qadd);
const ReferenceRegistrar kQLut("QLut", qlut);
const ReferenceRegistrar kQMul("QMul", qmul);
const ReferenceRegistrar kQuantizeLinear("QuantizeLinear", quantize_linear);
const ReferenceRegistrar kDequantizeLinear("DequantizeLinear", dequantize_linear);
const ReferenceRegistrar kQLinearConv("QLinearConv", qlinear_conv);
const ReferenceRegistrar kQLinearMatMul("QLinearMatMul", qlinear_matmul);
const ReferenceRegistrar kConvInteger("ConvInteger", conv_integer);
const ReferenceRegistrar kMatMulInteger("MatMulInteger", matmul_integer);

}  // namespace
}  // namespace lowbit
