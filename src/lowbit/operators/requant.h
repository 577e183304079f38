#pragma once
// The requantization constants of the int8 contract (/kernels/qu8-gemm/README.md), computed in
// one place for every int8 driver: per output channel, scale and bias already divided by the
// output scale (in double, rounded to float once), the residual's scale, and the clamp bounds
// in the output's integer units relative to its zero point.
#include <cstdint>
#include <vector>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit::ops {

// The code a real-domain activation limit maps to, within the output's code range `r`; `absent`
// when the limit is infinite.
int32_t clamp_bound(float act, float s_y, int32_t zp_y, CodeRange r, int32_t absent);

struct Requant {
  std::vector<float> scale, bias;  // per output channel
  float res_scale = 0.0f;          // residual (input `residual_input`), if any
  int32_t res_zp = 0, zp_y = 0;
  float qmin = 0.0f, qmax = 0.0f;  // clamp, relative to zp_y (the output's code range and act limits)
  bool f32_out = false;              // QGemm writing f32: scale/bias are in real units, no clamp

  // For a node whose input 0 is x (u8 storage), input 1 the per-channel weights, input 2 an optional
  // f32 bias; `channels` output channels; `residual_input` < 0 when there is none.
  // x_scale > 0 replaces the input's scale (BinaryConv: its weights multiply signs, +-1).
  Requant(const NodeContext& ctx, int64_t channels, int residual_input, double x_scale = 0.0);
};

}  // namespace lowbit::ops
