#include "lowbit/operators/requant.h"

#include <algorithm>
#include <cmath>

namespace lowbit::ops {

int32_t clamp_bound(float act, float s_y, int32_t zp_y, CodeRange range, int32_t absent) {
  if (!std::isfinite(act)) return absent;
  float r = std::nearbyintf(act / s_y);
  r = std::min(std::max(r, -1e6f), 1e6f);  // defined behaviour for absurd limits
  return std::clamp(static_cast<int32_t>(r) + zp_y, range.lo, range.hi);
}

Requant::Requant(const NodeContext& ctx, int64_t channels, int residual_input, double x_scale) {
  const double s_x = x_scale > 0.0 ? x_scale : double(ctx.in(0).quant->scale[0]);
  const QuantParams& qw = *ctx.in(1).quant;
  const Tensor* b = ctx.constant(2);
  f32_out = ctx.out(0).dtype == DType::f32;
  float s_y = 1.0f;
  if (!f32_out) {
    s_y = ctx.out(0).quant->scale[0];
    zp_y = ctx.out(0).quant->zero_point[0];
  }
  scale.resize(static_cast<size_t>(channels));
  bias.assign(static_cast<size_t>(channels), 0.0f);
  for (int64_t m = 0; m < channels; ++m) {
    const double s_w = qw.scale.size() == 1 ? qw.scale[0] : qw.scale[static_cast<size_t>(m)];
    scale[static_cast<size_t>(m)] = static_cast<float>(s_x * s_w / s_y);
    if (b) bias[static_cast<size_t>(m)] = static_cast<float>(double(b->data<float>()[m]) / s_y);
  }
  if (residual_input >= 0 && ctx.has_input(static_cast<size_t>(residual_input))) {
    const QuantParams& qr = *ctx.in(static_cast<size_t>(residual_input)).quant;
    res_scale = static_cast<float>(double(qr.scale[0]) / s_y);
    res_zp = qr.zero_point[0];
  }
  if (!f32_out) {
    const float act_min = ctx.node.attrs.get_float("act_min", -INFINITY);
    const float act_max = ctx.node.attrs.get_float("act_max", INFINITY);
    const CodeRange r = code_range(ctx.out(0));
    const int32_t lo = clamp_bound(act_min, s_y, zp_y, r, r.lo), hi = clamp_bound(act_max, s_y, zp_y, r, r.hi);
    qmin = static_cast<float>(lo - zp_y);
    qmax = static_cast<float>(std::max(lo, hi) - zp_y);
  }
}

}  // namespace lowbit::ops
