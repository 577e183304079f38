#pragma once
// Fast u8 pooling drivers (NCHW) for quantized graphs: MaxPool and GlobalAveragePool keep the
// input's quantization, so int8 plans stay in the quantized domain across them. Byte-identical
// to the reference kernels whatever the thread count.
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

// MaxPool 2-D, any kernel, stride, padding, dilation and ceil_mode.
std::string check_maxpool2d_u8(const NodeContext& ctx);
std::unique_ptr<Kernel> create_maxpool2d_u8_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_maxpool2d_u8_neon(const NodeContext& ctx);  // aarch64 builds only
// GlobalAveragePool: q = int(nearbyintf(float(sum_q) / float(H * W))).
// AveragePool: the reference's rounding (kernels/reference/pool.cc), count_include_pad and
// ceil_mode included.
std::string check_avgpool2d_u8(const NodeContext& ctx);
std::unique_ptr<Kernel> create_avgpool2d_u8_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_avgpool2d_u8_neon(const NodeContext& ctx);  // aarch64 builds only

std::string check_global_avgpool_u8(const NodeContext& ctx);
std::unique_ptr<Kernel> create_global_avgpool_u8_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_global_avgpool_u8_neon(const NodeContext& ctx);  // aarch64 builds only

}  // namespace lowbit
