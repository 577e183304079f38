#include "lowbit/ir/channel_table.h"

#include <algorithm>
#include <cmath>

#include "lowbit/common/error.h"

namespace lowbit {
namespace {
constexpr int64_t kMaxChannels = int64_t{1} << 16;  // 16 MB of tables; CNNs have at most a few thousand
}  // namespace

std::string channel_table_unavailable(const Graph& g, const Node& n) {
  if (n.attrs.get_string("op", "") != "BatchNormalization") return "the only per-channel map is BatchNormalization";
  if (n.inputs.empty() || n.outputs.empty()) return "needs X and Y";
  const Value& x = g.value(n.inputs[0]);
  const Value& y = g.value(n.outputs[0]);
  if (x.shape.size() < 2 || x.shape[1] <= 0) return "needs X of rank 2 or more with channels";
  // 256 bytes of table per channel: a hostile artifact's 10^8 channels would ask for 25 GB.
  if (x.shape[1] > kMaxChannels) return "more than " + std::to_string(kMaxChannels) + " channels";
  if (!x.quant || x.quant->scale.size() != 1 || !y.quant || y.quant->scale.size() != 1)
    return "needs X and Y quantized per tensor";
  if (n.inputs.size() != 6 || n.inputs[1] != kNoValue) return "needs inputs X, no table, scale, B, mean, var";
  for (size_t i = 2; i < 6; ++i) {
    const Tensor* t = g.constant(n.inputs[i]);
    if (!t || t->dtype() != DType::f32 || t->numel() != x.shape[1])
      return "input " + std::to_string(i) + " must be a constant of " + std::to_string(x.shape[1]) + " floats (one per channel)";
  }
  return "";
}

std::vector<uint8_t> channel_table(const Graph& g, const Node& n) {
  if (const std::string why = channel_table_unavailable(g, n); !why.empty())
    throw Error("node " + n.label() + ": per-channel table: " + why);
  const int64_t C = g.value(n.inputs[0]).shape[1];
  const QuantParams& qx = *g.value(n.inputs[0]).quant;
  const QuantParams& qy = *g.value(n.outputs[0]).quant;
  const CodeRange range = code_range(g.value(n.outputs[0]));
  const float* sc = g.constant(n.inputs[2])->data<float>();
  const float* bi = g.constant(n.inputs[3])->data<float>();
  const float* mean = g.constant(n.inputs[4])->data<float>();
  const float* var = g.constant(n.inputs[5])->data<float>();
  const float eps = n.attrs.get_float("epsilon", 1e-5f);
  const float lo = n.attrs.get_float("act_min", -INFINITY), hi = n.attrs.get_float("act_max", INFINITY);
  std::vector<uint8_t> table(static_cast<size_t>(C * 256));
  for (int64_t c = 0; c < C; ++c) {
    // As the reference BatchNormalization computes it (kernels/reference/conv.cc), then the clamp.
    const float k = sc[c] / std::sqrt(var[c] + eps);
    const float off = bi[c] - mean[c] * k;
    for (int32_t q = 0; q < 256; ++q) {
      float v = (static_cast<float>(q) - qx.zero_point[0]) * qx.scale[0];
      v = v * k + off;
      v = v < lo ? lo : v;
      v = v > hi ? hi : v;
      const float r = std::isnan(v) ? 0.0f : std::clamp(std::nearbyintf(v / qy.scale[0]), -1e9f, 1e9f);
      table[static_cast<size_t>(c * 256 + q)] =
          static_cast<uint8_t>(std::clamp<int64_t>(static_cast<int64_t>(r) + qy.zero_point[0], range.lo, range.hi));
    }
  }
  return table;
}

}  // namespace lowbit
