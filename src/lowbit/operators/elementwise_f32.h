#pragma once
// fp32 element-wise drivers over kernels/f32-velementwise: activations (Relu, Clip, LeakyRelu,
// HardSigmoid, HardSwish, Sigmoid, and lowbit's fused SiLU) and Add / Sub / Mul / Div with the
// broadcasts CNNs use: equal shapes, a scalar side, or a side that is the output's leading dims
// followed by ones ([N, C, 1, 1] against [N, C, H, W]: squeeze-excite's per-channel scale).
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

// "" when one of the rows can run the node, else why not (dtype, broadcast pattern).
std::string check_velementwise_f32(const NodeContext& ctx);
// One create per kernel set: the op comes from the node.
std::unique_ptr<Kernel> create_velementwise_avx512(const NodeContext& ctx);  // x86-64 builds
std::unique_ptr<Kernel> create_velementwise_avx2(const NodeContext& ctx);    // x86-64 builds
std::unique_ptr<Kernel> create_velementwise_neon(const NodeContext& ctx);    // AArch64 builds
std::unique_ptr<Kernel> create_velementwise_portable(const NodeContext& ctx);

}  // namespace lowbit
