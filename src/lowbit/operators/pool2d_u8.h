#pragma once
// Fast u8 pooling drivers (NCHW) for quantized graphs: MaxPool and AveragePool keep the input's
// quantization and GlobalAveragePool requantizes to its output's, so int8 plans stay in the
// quantized domain across them. Byte-identical to the reference kernels whatever the thread count.
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

// MaxPool 2-D, any kernel, stride, padding, dilation and ceil_mode.
std::string check_maxpool2d_u8(const NodeContext& ctx);
std::unique_ptr<Kernel> create_maxpool2d_u8_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_maxpool2d_u8_neon(const NodeContext& ctx);  // aarch64 builds only
// AveragePool: the reference's rounding (kernels/reference/pool.cc), count_include_pad and
// ceil_mode included.
std::string check_avgpool2d_u8(const NodeContext& ctx);
std::unique_ptr<Kernel> create_avgpool2d_u8_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_avgpool2d_u8_neon(const NodeContext& ctx);  // aarch64 builds only

// GlobalAveragePool: the mean requantized to the output's parameters (qu8_mean_requant in
// kernels/qu8-pool/qu8_pool.h).
std::string check_global_avgpool_u8(const NodeContext& ctx);
std::unique_ptr<Kernel> create_global_avgpool_u8_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_global_avgpool_u8_neon(const NodeContext& ctx);  // aarch64 builds only

}  // namespace lowbit
