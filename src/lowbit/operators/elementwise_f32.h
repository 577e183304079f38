#pragma once
// fp32 element-wise drivers over kernels/f32-velementwise: activations (Relu, Clip, LeakyRelu,
// HardSigmoid, HardSwish, Sigmoid, and lowbit's fused SiLU) and Add / Sub / Mul / Div with the
// broadcasts CNNs use: equal shapes, a scalar side, or a side that is the output's leading dims
// followed by ones ([N, C, 1, 1] against [N, C, H, W]: squeeze-excite's per-channel scale);
// and inference BatchNormalization as a per-channel affine map.
#include <memory>
#include <string>

#include "lowbit/kernels/f32-velementwise/velementwise.h"
#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

struct Conv2dParams;

// An fp32 Conv's fused activation (Conv2dParams::post_op) on the fastest element-wise set the
// target runs, for a conv kernel to apply to each output tile right after storing it (while it
// is in L1). Every set gives the same bits, so the choice does not change results. Empty (false)
// when the conv has none.
class ConvPostOp {
 public:
  ConvPostOp() = default;
  ConvPostOp(const Conv2dParams& p, const Target& target);
  explicit operator bool() const { return fn_ != nullptr || affine_; }
  void operator()(float* y, int64_t n) const {
    if (n <= 0) return;
    if (fn_) fn_(static_cast<size_t>(n), y, y, params_);
    // post_scale / post_shift: a multiply, then an add, each rounded, as the Mul and Add nodes
    // fuse_epilogues took them from (over a tile in L1; the loop vectorises).
    if (affine_)
      for (int64_t i = 0; i < n; ++i) {
        const float scaled = y[i] * scale_;
        y[i] = scaled + shift_;
      }
  }

 private:
  VUnaryFn fn_ = nullptr;
  VUnaryParams params_;
  bool affine_ = false;
  float scale_ = 1.0f, shift_ = 0.0f;
};

// "" when one of the rows can run the node, else why not (dtype, broadcast pattern).
std::string check_velementwise_f32(const NodeContext& ctx);
// One create per kernel set: the op comes from the node.
std::unique_ptr<Kernel> create_velementwise_avx512(const NodeContext& ctx);  // x86-64 builds
std::unique_ptr<Kernel> create_velementwise_avx2(const NodeContext& ctx);    // x86-64 builds
std::unique_ptr<Kernel> create_velementwise_neon(const NodeContext& ctx);    // AArch64 builds
std::unique_ptr<Kernel> create_velementwise_portable(const NodeContext& ctx);

// Inference BatchNormalization (constant parameters; what BN folding leaves: DenseNet's BN after a
// Concat) as one affine pass per channel plane, with its fused Relu / Clip (act_min / act_max).
// The per-channel scale and shift are computed once, in the reference's order.
std::string check_batchnorm_f32(const NodeContext& ctx);
std::unique_ptr<Kernel> create_batchnorm_avx512(const NodeContext& ctx);  // x86-64 builds
std::unique_ptr<Kernel> create_batchnorm_avx2(const NodeContext& ctx);    // x86-64 builds
std::unique_ptr<Kernel> create_batchnorm_neon(const NodeContext& ctx);    // AArch64 builds
std::unique_ptr<Kernel> create_batchnorm_portable(const NodeContext& ctx);

}  // namespace lowbit
