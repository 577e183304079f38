#pragma once
// Fast fp32 fully-connected drivers: Gemm and MatMul with constant 2-D weights.
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"
#include "lowbit/operators/conv2d_f32.h"

namespace lowbit {

std::string check_gemm_f32(const NodeContext& ctx);
std::unique_ptr<Kernel> create_gemm_f32(const NodeContext& ctx, const F32GemmKernels& ks);
std::unique_ptr<Kernel> create_gemm_f32_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_gemm_f32_avx512(const NodeContext& ctx);
std::unique_ptr<Kernel> create_gemm_f32_neon(const NodeContext& ctx);
std::string check_matmul_f32(const NodeContext& ctx);
std::unique_ptr<Kernel> create_matmul_f32(const NodeContext& ctx, const F32GemmKernels& ks);
std::unique_ptr<Kernel> create_matmul_f32_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_matmul_f32_avx512(const NodeContext& ctx);
std::unique_ptr<Kernel> create_matmul_f32_neon(const NodeContext& ctx);

}  // namespace lowbit
