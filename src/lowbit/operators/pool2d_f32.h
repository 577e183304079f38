#pragma once
// Fast fp32 pooling drivers (NCHW).
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

std::string check_maxpool2d_f32(const NodeContext& ctx);
std::unique_ptr<Kernel> create_maxpool2d_f32_avx2(const NodeContext& ctx);    // x86-64 builds
std::unique_ptr<Kernel> create_maxpool2d_f32_avx512(const NodeContext& ctx);  // x86-64 builds
std::unique_ptr<Kernel> create_maxpool2d_f32_neon(const NodeContext& ctx);    // AArch64 builds
std::string check_avgpool2d_f32(const NodeContext& ctx);
std::unique_ptr<Kernel> create_avgpool2d_f32_avx2(const NodeContext& ctx);    // x86-64 builds
std::unique_ptr<Kernel> create_avgpool2d_f32_avx512(const NodeContext& ctx);  // x86-64 builds
std::unique_ptr<Kernel> create_avgpool2d_f32_neon(const NodeContext& ctx);    // AArch64 builds
std::string check_global_avgpool_f32(const NodeContext& ctx);
std::unique_ptr<Kernel> create_global_avgpool_f32_avx2(const NodeContext& ctx);
// ReduceMean over the spatial axes: the global average pool's kernel (create_global_avgpool_*).
std::string check_reducemean_spatial_f32(const NodeContext& ctx);

}  // namespace lowbit
