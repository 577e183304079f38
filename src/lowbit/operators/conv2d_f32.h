#pragma once
// Fast fp32 Conv drivers (NCHW). The drivers are baseline C++; the ISA lives in the micro-kernels
// they call through function pointers.
#include <cstdlib>
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"
#include "lowbit/kernels/f32-gemm/f32_gemm.h"

namespace lowbit {

// The micro-kernels an implicit-GEMM conv or a fully-connected layer runs on, as data, so every
// ISA shares one driver: main[MR] computes MR x nr tiles and tail[MR] MR x nr_tail tiles (for a
// last panel of at most nr_tail columns), both for MR = 1..mr; im2col packs B panels of either
// width.
struct F32GemmKernels {
  static constexpr int kMaxMR = 14;
  int mr = 6;                // rows (output channels / activation rows) per A panel
  int nr = 16, nr_tail = 8;  // panel widths (output pixels / output features)
  int kc_max = 384;          // K rows per block: one kc x nr B panel stays in L1
  F32GemmUkernel main[kMaxMR + 1] = {};
  F32GemmUkernel tail[kMaxMR + 1] = {};
  void (*im2col)(size_t kc, const float* x, const int64_t* koff, const F32Im2colRun* runs, size_t nruns, size_t stride,
                 size_t nr, float* b) = nullptr;
  // Optional (f32_transpose_store__avx512's contract): the channels-on-lanes conv's write-back;
  // nullptr falls back to scalar code.
  void (*transpose)(size_t np, size_t nc, const float* ct, size_t ldc, const float* res, float* y, size_t ldy,
                    float min, float max) = nullptr;
};
// Packed weights, streamed from memory once per inference (ResNet-50: 100 MB), on 2 MB pages
// where the OS grants them (madvise: transparent huge pages are often opt-in), so the stream does
// not miss the TLB every 4 KB. 64-byte aligned, zero filled.
class PackedWeights {
 public:
  PackedWeights() = default;
  explicit PackedWeights(int64_t floats);
  float* data() const { return data_.get(); }
  int64_t nbytes() const { return static_cast<int64_t>(bytes_); }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  size_t bytes_ = 0;
  std::unique_ptr<float, Free> data_;
};

// Each defined only in builds for its architecture (as every *_avx2 / *_neon factory below).
const F32GemmKernels& f32_gemm_kernels_avx2();
const F32GemmKernels& f32_gemm_kernels_avx512();
const F32GemmKernels& f32_gemm_kernels_neon();

// Conv as implicit GEMM: any group, stride, dilation and padding.
std::string check_conv2d_f32_igemm(const NodeContext& ctx);
std::unique_ptr<Kernel> create_conv2d_f32_igemm(const NodeContext& ctx, const F32GemmKernels& ks);
std::unique_ptr<Kernel> create_conv2d_f32_igemm_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_conv2d_f32_igemm_avx512(const NodeContext& ctx);
std::unique_ptr<Kernel> create_conv2d_f32_igemm_neon(const NodeContext& ctx);

// Depthwise conv (group == C == M), any kernel size, stride, dilation and padding.
std::string check_conv2d_f32_dwconv(const NodeContext& ctx);
std::unique_ptr<Kernel> create_conv2d_f32_dwconv_avx2(const NodeContext& ctx);    // x86-64 builds
std::unique_ptr<Kernel> create_conv2d_f32_dwconv_avx512(const NodeContext& ctx);  // x86-64 builds
std::unique_ptr<Kernel> create_conv2d_f32_dwconv_neon(const NodeContext& ctx);    // AArch64 builds
// The same with channels on the lanes (kernels/f32-dwconv/README.md), on small output planes.
std::string check_conv2d_f32_dwconv_lanes16(const NodeContext& ctx);  // AVX-512: 16 lanes
std::string check_conv2d_f32_dwconv_lanes8(const NodeContext& ctx);   // AVX2: 8
std::unique_ptr<Kernel> create_conv2d_f32_dwconv_lanes_avx2(const NodeContext& ctx);    // x86-64 builds
std::unique_ptr<Kernel> create_conv2d_f32_dwconv_lanes_avx512(const NodeContext& ctx);  // x86-64 builds
// Grouped convs with as many input as output channels per group, at most the lanes, on the same
// layout and the same creators (they tell the two apart by the group count).
std::string check_conv2d_f32_gconv_lanes16(const NodeContext& ctx);  // AVX-512: up to 16 per group
std::string check_conv2d_f32_gconv_lanes8(const NodeContext& ctx);   // AVX2: up to 8

}  // namespace lowbit
