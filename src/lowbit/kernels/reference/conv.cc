// Reference Conv / ConvTranspose / BatchNormalization / Gemm / MatMul (f32).
// Loops keep the innermost dimension contiguous in the output so that whole networks run in
// tests at a few GFLOP/s without any cleverness.
#include <algorithm>
#include <cmath>
#include <vector>

#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/reference/broadcast.h"
#include "lowbit/kernels/reference/reference.h"

namespace lowbit {
namespace {
using ref::fail;
using ref::present;

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

void require_f32(const Node& n, std::span<const TensorView> in, size_t count) {
  for (size_t i = 0; i < count && i < in.size(); ++i)
    if (in[i].data && in[i].dtype != DType::f32)
      fail(n, "reference kernel expects f32 input " + std::to_string(i) + ", got " + dtype_name(in[i].dtype));
}

// The fused post_op over y in place, by that op's own reference kernel (one definition of it).
void apply_post_op(const Graph& g, const Conv2dParams& p, const Node& conv, const TensorView& y) {
  Node act;
  act.name = conv.name + "/" + p.post_op;
  act.op = p.post_op;
  act.attrs.set("alpha", p.post_alpha);
  act.attrs.set("beta", p.post_beta);
  const ReferenceFn fn = find_reference(p.post_op);
  if (!fn) fail(conv, "no reference kernel for its post_op " + p.post_op);
  const TensorView v[1] = {y};
  fn(g, act, std::span<const TensorView>(v, 1), std::span<const TensorView>(v, 1));
}

// y = post_op(clamp(conv(x, w) + bias + residual, act_min, act_max))
void conv(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  require_f32(n, in, 4);
  const Conv2dParams p = conv2d_params(g, n);
  const float* x = in[0].as<float>();
  const float* w = in[1].as<float>();
  const float* bias = present(in, 2) ? in[2].as<float>() : nullptr;
  const float* res = present(in, 3) ? in[3].as<float>() : nullptr;
  float* y = out[0].as<float>();
  const int64_t Cg = p.C_per_group(), Mg = p.M_per_group();
  const int64_t in_plane = p.H * p.W, out_plane = p.OH * p.OW;
  for (int64_t b = 0; b < p.N; ++b) {
    for (int64_t m = 0; m < p.M; ++m) {
      const int64_t grp = m / Mg;
      float* yp = y + (b * p.M + m) * out_plane;
      std::fill(yp, yp + out_plane, bias ? bias[m] : 0.0f);
      for (int64_t c = 0; c < Cg; ++c) {
        const float* xp = x + (b * p.C + grp * Cg + c) * in_plane;
        const float* wp = w + (m * Cg + c) * p.KH * p.KW;
        for (int64_t kh = 0; kh < p.KH; ++kh) {
          for (int64_t kw = 0; kw < p.KW; ++kw) {
            const float wv = wp[kh * p.KW + kw];
            const int64_t xoff = kw * p.DW - p.pad_left;  // iw = ow * SW + xoff
            const int64_t ow0 = std::max<int64_t>(0, ceil_div(-xoff, p.SW));
            const int64_t ow1 = std::min<int64_t>(p.OW, floor_div(p.W - 1 - xoff, p.SW) + 1);
            for (int64_t oh = 0; oh < p.OH; ++oh) {
              const int64_t ih = oh * p.SH - p.pad_top + kh * p.DH;
              if (ih < 0 || ih >= p.H) continue;
              const float* xr = xp + ih * p.W + xoff;
              float* yr = yp + oh * p.OW;
              for (int64_t ow = ow0; ow < ow1; ++ow) yr[ow] += wv * xr[ow * p.SW];
            }
          }
        }
      }
      const float* rp = res ? res + (b * p.M + m) * out_plane : nullptr;
      for (int64_t i = 0; i < out_plane; ++i) {
        float v = rp ? yp[i] + rp[i] : yp[i];
        yp[i] = std::min(std::max(v, p.act_min), p.act_max);
      }
    }
  }
  if (!p.post_op.empty()) apply_post_op(g, p, n, out[0]);
  if (p.has_post_affine()) {
    for (int64_t i = 0, e = p.N * p.M * p.OH * p.OW; i < e; ++i) {
      const float scaled = y[i] * p.post_scale;
      y[i] = scaled + p.post_shift;
    }
  }
}

// ConvTranspose with 1-3 spatial dims (lower ranks are treated as 3-D with unit leading axes).
void conv_transpose(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  require_f32(n, in, 3);
  const Shape& xs = in[0].shape;
  const Shape& ws = in[1].shape;
  const Shape& ys = out[0].shape;
  const int64_t sr = static_cast<int64_t>(xs.size()) - 2;
  if (sr < 1 || sr > 3) fail(n, "reference ConvTranspose supports 1-3 spatial dims");
  const auto& a = n.attrs;
  const int64_t group = a.get_int("group", 1);
  const int64_t N = xs[0], C = xs[1], M = ys[1], Cg = C / group, Mg = ws[1];
  if (Mg * group != M || ws[0] != C) fail(n, "weight shape does not match input/output channels");
  const auto strides = a.get_ints("strides", std::vector<int64_t>(sr, 1));
  const auto dil = a.get_ints("dilations", std::vector<int64_t>(sr, 1));
  const auto pads = a.get_ints("pads", std::vector<int64_t>(2 * sr, 0));
  const auto opad = a.get_ints("output_padding", std::vector<int64_t>(sr, 0));
  const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  const bool derive_pads = a.has("output_shape") || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";

  // Normalised 3-D geometry: I = input size, K = kernel, O = output, S/D stride/dilation, P = pad begin.
  int64_t I[3] = {1, 1, 1}, K[3] = {1, 1, 1}, O[3] = {1, 1, 1}, S[3] = {1, 1, 1}, D[3] = {1, 1, 1}, P[3] = {0, 0, 0};
  for (int64_t i = 0; i < sr; ++i) {
    const int64_t j = 3 - sr + i;
    const size_t si = static_cast<size_t>(i);
    I[j] = xs[2 + si];
    K[j] = ws[2 + si];
    O[j] = ys[2 + si];
    S[j] = strides.at(si);
    D[j] = dil.at(si);
    if (derive_pads) {
      // The output size is fixed (explicit output_shape or SAME); the pads follow from it. The
      // total may be negative (output_shape beyond the full result): floor division then puts the
      // extra zero rows at the end, as the ONNX reference does.
      const int64_t total = S[j] * (I[j] - 1) + opad.at(si) + (K[j] - 1) * D[j] + 1 - O[j];
      P[j] = auto_pad == "SAME_UPPER" ? floor_div(total, 2) : total - floor_div(total, 2);
    } else {
      P[j] = auto_pad == "VALID" ? 0 : pads.at(si);
    }
  }
  const float* x = in[0].as<float>();
  const float* w = in[1].as<float>();
  const float* bias = present(in, 2) ? in[2].as<float>() : nullptr;
  float* y = out[0].as<float>();
  const int64_t isz = I[0] * I[1] * I[2], osz = O[0] * O[1] * O[2], ksz = K[0] * K[1] * K[2];
  for (int64_t b = 0; b < N; ++b)
    for (int64_t m = 0; m < M; ++m) std::fill_n(y + (b * M + m) * osz, osz, bias ? bias[m] : 0.0f);
  for (int64_t b = 0; b < N; ++b) {
    for (int64_t ic = 0; ic < C; ++ic) {
      const int64_t grp = ic / Cg;
      const float* xp = x + (b * C + ic) * isz;
      for (int64_t m = 0; m < Mg; ++m) {
        const int64_t oc = grp * Mg + m;
        float* yp = y + (b * M + oc) * osz;
        const float* wp = w + (ic * Mg + m) * ksz;
        for (int64_t kd = 0; kd < K[0]; ++kd)
          for (int64_t kh = 0; kh < K[1]; ++kh)
            for (int64_t kw = 0; kw < K[2]; ++kw) {
              const float wv = wp[(kd * K[1] + kh) * K[2] + kw];
              for (int64_t id = 0; id < I[0]; ++id) {
                const int64_t od = id * S[0] - P[0] + kd * D[0];
                if (od < 0 || od >= O[0]) continue;
                for (int64_t ih = 0; ih < I[1]; ++ih) {
                  const int64_t oh = ih * S[1] - P[1] + kh * D[1];
                  if (oh < 0 || oh >= O[1]) continue;
                  const float* xr = xp + (id * I[1] + ih) * I[2];
                  float* yr = yp + (od * O[1] + oh) * O[2];
                  for (int64_t iw = 0; iw < I[2]; ++iw) {
                    const int64_t ow = iw * S[2] - P[2] + kw * D[2];
                    if (ow >= 0 && ow < O[2]) yr[ow] += wv * xr[iw];
                  }
                }
              }
            }
      }
    }
  }
}

// Inference-mode BatchNormalization over axis 1, then the fused clamp (act_min / act_max, from a
// Relu / Clip fuse_epilogues folded in; NaN passes through it).
void batch_norm(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  require_f32(n, in, 5);
  const float lo = n.attrs.get_float("act_min", -INFINITY), hi = n.attrs.get_float("act_max", INFINITY);
  const Shape& xs = in[0].shape;
  const float eps = n.attrs.get_float("epsilon", 1e-5f);
  const int64_t N = xs.empty() ? 1 : xs[0];
  const int64_t C = xs.size() > 1 ? xs[1] : 1;
  int64_t inner = 1;
  for (size_t i = 2; i < xs.size(); ++i) inner *= xs[i];
  const float *x = in[0].as<float>(), *sc = in[1].as<float>(), *bi = in[2].as<float>();
  const float *mean = in[3].as<float>(), *var = in[4].as<float>();
  float* y = out[0].as<float>();
  for (int64_t c = 0; c < C; ++c) {
    const float k = sc[c] / std::sqrt(var[c] + eps);
    const float off = bi[c] - mean[c] * k;
    for (int64_t b = 0; b < N; ++b) {
      const float* xp = x + (b * C + c) * inner;
      float* yp = y + (b * C + c) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        float v = xp[i] * k + off;
        v = v < lo ? lo : v;
        yp[i] = v > hi ? hi : v;
      }
    }
  }
}

// Y = clamp(alpha * A' * B' + beta * C, act_min, act_max)
void gemm(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  require_f32(n, in, 3);
  const auto& a = n.attrs;
  const float alpha = a.get_float("alpha", 1.0f), beta = a.get_float("beta", 1.0f);
  const bool ta = a.get_int("transA", 0) != 0, tb = a.get_int("transB", 0) != 0;
  const float lo = a.get_float("act_min", -INFINITY), hi = a.get_float("act_max", INFINITY);
  const Shape& as = in[0].shape;
  const Shape& bs = in[1].shape;
  if (as.size() != 2 || bs.size() != 2) fail(n, "Gemm expects 2-D A and B");
  const int64_t M = ta ? as[1] : as[0], K = ta ? as[0] : as[1], N = tb ? bs[0] : bs[1];
  if ((tb ? bs[1] : bs[0]) != K) fail(n, "Gemm inner dimensions differ");
  const float* A = in[0].as<float>();
  const float* B = in[1].as<float>();
  std::vector<float> bt;
  if (tb) {  // make the innermost loop contiguous
    bt.resize(static_cast<size_t>(K * N));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) bt[static_cast<size_t>(k * N + j)] = B[j * K + k];
    B = bt.data();
  }
  float* Y = out[0].as<float>();
  std::vector<float> row(static_cast<size_t>(N));
  for (int64_t i = 0; i < M; ++i) {
    std::fill(row.begin(), row.end(), 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const float av = ta ? A[k * M + i] : A[i * K + k];
      const float* br = B + k * N;
      for (int64_t j = 0; j < N; ++j) row[static_cast<size_t>(j)] += av * br[j];
    }
    for (int64_t j = 0; j < N; ++j) Y[i * N + j] = alpha * row[static_cast<size_t>(j)];
  }
  if (present(in, 2) && beta != 0.0f) {
    const float* Cp = in[2].as<float>();
    ref::for_each_broadcast<1>(Shape{M, N}, {in[2].shape},
                               [&](int64_t o, const std::array<int64_t, 1>& off) { Y[o] += beta * Cp[off[0]]; });
  }
  if (lo != -INFINITY || hi != INFINITY)
    for (int64_t i = 0; i < M * N; ++i) Y[i] = std::min(std::max(Y[i], lo), hi);
}

// numpy matmul: batch dims broadcast, 1-D operands promoted and their unit axis dropped.
void matmul(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  require_f32(n, in, 2);
  Shape sa = in[0].shape, sb = in[1].shape;
  if (sa.empty() || sb.empty()) fail(n, "MatMul operands must have rank >= 1");
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  if (sb[sb.size() - 2] != K) fail(n, "MatMul inner dimensions differ");
  const Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const Shape bo = ref::broadcast_shape(ba, bb);
  const float* A = in[0].as<float>();
  const float* B = in[1].as<float>();
  float* Y = out[0].as<float>();
  ref::for_each_broadcast<2>(bo, {ba, bb}, [&](int64_t o, const std::array<int64_t, 2>& off) {
    const float* a = A + off[0] * M * K;
    const float* b = B + off[1] * K * N;
    float* y = Y + o * M * N;
    std::fill_n(y, M * N, 0.0f);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) {
        const float av = a[i * K + k];
        const float* br = b + k * N;
        float* yr = y + i * N;
        for (int64_t j = 0; j < N; ++j) yr[j] += av * br[j];
      }
  });
}

ReferenceRegistrar reg_conv("Conv", conv);
ReferenceRegistrar reg_conv_transpose("ConvTranspose", conv_transpose);
ReferenceRegistrar reg_batch_norm("BatchNormalization", batch_norm);
ReferenceRegistrar reg_gemm("Gemm", gemm);
ReferenceRegistrar reg_matmul("MatMul", matmul);

}  // namespace
}  // namespace lowbit
