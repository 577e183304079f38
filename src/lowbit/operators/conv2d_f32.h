#pragma once
// Fast fp32 Conv drivers (NCHW). The drivers are baseline C++; the ISA lives in the micro-kernels
// they call through function pointers.
#include <memory>
#include <string>

#include "lowbit/dispatch/registry.h"
#include "lowbit/kernels/f32-gemm/f32_gemm.h"

namespace lowbit {

// The micro-kernels an implicit-GEMM conv or a fully-connected layer runs on: MR x 16 and MR x 8
// tiles indexed by MR (1..kMaxMR).
struct F32GemmKernels {
  static constexpr int kMaxMR = 6;
  F32GemmUkernel nr16[kMaxMR + 1] = {};
  F32GemmUkernel nr8[kMaxMR + 1] = {};
  void (*im2col)(size_t kc, const float* x, const int64_t* koff, const F32Im2colRun* runs, size_t nruns, size_t stride,
                 size_t nr, float* b) = nullptr;
};
const F32GemmKernels& f32_gemm_kernels_avx2();

// Conv as implicit GEMM: any group, stride, dilation and padding.
std::string check_conv2d_f32_igemm(const NodeContext& ctx);
std::unique_ptr<Kernel> create_conv2d_f32_igemm(const NodeContext& ctx, const F32GemmKernels& ks);
std::unique_ptr<Kernel> create_conv2d_f32_igemm_avx2(const NodeContext& ctx);

// Depthwise conv (group == C == M), any kernel size, stride, dilation and padding.
std::string check_conv2d_f32_dwconv(const NodeContext& ctx);
std::unique_ptr<Kernel> create_conv2d_f32_dwconv_avx2(const NodeContext& ctx);

}  // namespace lowbit
