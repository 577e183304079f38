#pragma once
// QLut: an element-wise map (HardSwish, Sigmoid, SiLU, ...) on u8 codes as a lookup in its
// 256-entry table, or a per-channel map (an inference BatchNormalization) with a table per channel,
// plane by plane (quant/quantize.cc makes the tables). Exact, so identical to the reference
// whatever the thread count.
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

std::string check_qlut_u8(const NodeContext& ctx);
// One create per kernels/qu8-lut row.
std::unique_ptr<Kernel> create_qlut_u8_scalar(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qlut_u8_avx2(const NodeContext& ctx);        // x86-64 builds
std::unique_ptr<Kernel> create_qlut_u8_avx512vbmi(const NodeContext& ctx);  // x86-64 builds
std::unique_ptr<Kernel> create_qlut_u8_neon(const NodeContext& ctx);        // AArch64 builds

}  // namespace lowbit
