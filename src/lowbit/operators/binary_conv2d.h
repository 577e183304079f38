#pragma once
// The binary convolutions, by XOR-popcount over channel-packed bits (kernels/qb1-gemm), with one
// driver for both ops that run on them:
//
// QConv (precision w1a1): u1 activation codes {0, 1} in u8 storage, b1 weights (+-1), with the
// int8 requantizing epilogue. The arithmetic (exact): with v = 2x - 1 in {-1, +1} and the
// kernel's D = sum_k v_k w_k over every tap (padded taps packed as the value the padding code
// zp_x stands for),
//   sum_k (x_k - zp_x) w_k = (D + W) / 2 - zp_x * W,    W = sum_k w_k (all taps)
// which is what the reference computes when it skips padded taps (they hold zp_x, real 0).
//
// BinaryConv (ir/ops_quant.cc; imported binary models): a real-valued input binarised by its sign
// while it is packed (the +-1 tensor is never stored), b1 weights times a per-channel alpha, dot
// = D; the output in the input's domain: f32 (fmaf(D, alpha, bias) + residual, clamped) or u8
// codes (the int8 contract's requantization, with the signs' scale 1), or packed signs (b1: a
// BatchNorm + Sign after the conv as one integer threshold per channel), which the next binary
// conv reads as they are.
#include <memory>
#include <string>

#include "lowbit/kernels/qb1-gemm/qb1_gemm.h"
#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

std::string check_qconv2d_qu1_qb1w_xnor(const NodeContext& ctx);
// BinaryConv, one per input domain: "" when the node's input is f32 (u8) and its shape fits.
std::string check_binary_conv2d_f32(const NodeContext& ctx);
std::string check_binary_conv2d_qu8(const NodeContext& ctx);
std::string check_binary_conv2d_qb1(const NodeContext& ctx);  // packed signs in (b1 activations)

// Creates the driver for either op (QConv u1 x b1, or BinaryConv) on one kernel set.
std::unique_ptr<Kernel> create_binary_conv2d(const NodeContext& ctx, const Qb1GemmKernels& ks);
std::unique_ptr<Kernel> create_binary_conv2d_portable(const NodeContext& ctx);
std::unique_ptr<Kernel> create_binary_conv2d_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_binary_conv2d_avx512vpopcntdq(const NodeContext& ctx);
std::unique_ptr<Kernel> create_binary_conv2d_neon(const NodeContext& ctx);  // aarch64 builds only

}  // namespace lowbit
