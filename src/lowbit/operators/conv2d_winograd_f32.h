#pragma once
// fp32 3x3 stride-1 Conv by Winograd F(2x2, 3x3) (kernels/f32-winograd/README.md): 2.25x fewer
// multiplies than the implicit GEMM, on the same GEMM micro-kernels.
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"
#include "lowbit/kernels/f32-winograd/f32_winograd.h"
#include "lowbit/operators/conv2d_f32.h"

namespace lowbit {

// One ISA's kernels for the Winograd conv: the GEMM micro-kernels and the two transforms.
struct F32WinogradKernels {
  const F32GemmKernels* gemm = nullptr;
  F32WinogradSplit split = nullptr;
  F32WinogradInput input = nullptr;
  F32WinogradOutput output = nullptr;
};

// "" for a 3x3, stride 1, dilation 1, ungrouped fp32 conv with enough 2x2 output tiles (and
// channels) to repay the 16/9 larger transformed weights; else why not.
std::string check_conv2d_f32_winograd(const NodeContext& ctx);
std::unique_ptr<Kernel> create_conv2d_f32_winograd(const NodeContext& ctx, const F32WinogradKernels& ks);
std::unique_ptr<Kernel> create_conv2d_f32_winograd_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_conv2d_f32_winograd_avx512(const NodeContext& ctx);
std::unique_ptr<Kernel> create_conv2d_f32_winograd_neon(const NodeContext& ctx);

}  // namespace lowbit
