#pragma once
// QConv on sub-byte codes: the implicit GEMM driver (qconv2d_u8) over the vpmaddubsw kernels of
// kernels/qsub-gemm, which are exact only when 4- or 2-bit codes bound the products.
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

// k groups (4 k values each) whose vpmaddubsw pair sums fit int16 for this node's code ranges:
// floor(32767 / (2 * max x * max |w|)); 0 when not even one fits (u8 x i8 codes).
int64_t qsub_int16_groups(const NodeContext& ctx);

// The three rows of the table: 4-bit weights, 2-bit weights, int8 weights with 4- or 2-bit
// activations. Each is the igemm check plus its codes and an int16 span of at least 8 groups.
std::string check_qconv2d_qc4w_igemm(const NodeContext& ctx);
std::string check_qconv2d_qc2w_igemm(const NodeContext& ctx);
std::string check_qconv2d_qu4_qc8w_igemm(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_qsub_igemm_avx2(const NodeContext& ctx);

}  // namespace lowbit
