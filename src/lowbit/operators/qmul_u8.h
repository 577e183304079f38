#pragma once
// QMul driver: u8 x u8 -> u8, B of A's shape or a scale per leading index (squeeze-excite), over
// the AVX2 or NEON kernel (kernels/qu8-vmul); elementwise, so any split gives the same bytes.
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

std::string check_qmul_u8(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qmul_u8_avx2(const NodeContext& ctx);  // x86-64 builds only
std::unique_ptr<Kernel> create_qmul_u8_neon(const NodeContext& ctx);  // aarch64 builds only

}  // namespace lowbit
