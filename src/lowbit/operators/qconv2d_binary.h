#pragma once
// Binary QConv (precision w1a1): u1 activation codes {0, 1} in u8 storage, b1 weights (+-1), by
// XOR-popcount over channel-packed bits (kernels/qb1-gemm), with the int8 requantizing epilogue.
//
// The arithmetic (exact): with v = 2x - 1 in {-1, +1} and the kernel's D = sum_k v_k w_k over every
// tap (padded taps packed as the value the padding code zp_x stands for),
//   sum_k (x_k - zp_x) w_k = (D + W) / 2 - zp_x * W,    W = sum_k w_k (all taps)
// which is what the reference computes when it skips padded taps (they hold zp_x, real 0).
#include <memory>
#include <string>

#include "lowbit/kernels/qb1-gemm/qb1_gemm.h"
#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

std::string check_qconv2d_qu1_qb1w_xnor(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_qu1_qb1w_xnor(const NodeContext& ctx, const Qb1GemmKernels& ks);
std::unique_ptr<Kernel> create_qconv2d_qu1_qb1w_xnor_portable(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_qu1_qb1w_xnor_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_qu1_qb1w_xnor_avx512vpopcntdq(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_qu1_qb1w_xnor_neon(const NodeContext& ctx);  // aarch64 builds only

}  // namespace lowbit
