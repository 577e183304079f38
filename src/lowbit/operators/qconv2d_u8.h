#pragma once
// Fast quantized (u8 activations, i8 per-channel weights) drivers: QConv as implicit GEMM,
// QGemm (fully connected) and QAdd. The drivers are baseline C++; the ISA lives in the micro-kernels
// they call through function pointers, so each result is byte-identical to the reference kernels
// (kernels/reference/quant.cc) whatever the ISA or thread count.
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"
#include "lowbit/kernels/qu8-dwconv/qu8_dwconv.h"
#include "lowbit/kernels/qu8-gemm/qu8_gemm.h"

namespace lowbit {

namespace qops {
// "" if input i is absent or has dtype `want`, else "weights dtype i4, needs i8".
std::string need_dtype(const NodeContext& ctx, size_t i, const char* what, DType want);
// "" if the weights (input 1) are i8, or i4 / i2 codes that the int8 kernels unpack once.
std::string need_weights(const NodeContext& ctx);
// "" if v carries usable quantization parameters with 1 or `channels` scales, else why not.
std::string need_quant(const Value& v, const char* what, size_t channels);
}  // namespace qops

// QConv with group-wise weight scales (QuantParams::block_size) on the same driver: each group of K
// is one K block whose int32 sums are scaled on their own; needs the set's group_fma /
// group_finish, a block size that is a multiple of its k group (kg) and divides the input channels.
std::string check_qconv2d_grouped_igemm(const NodeContext& ctx, int64_t kg);

// QConv as implicit GEMM: any group, stride, dilation and padding, bias, residual and clamp.
std::string check_qconv2d_u8_igemm(const NodeContext& ctx);
// packed_weights: 4- and 2-bit weights stay packed in memory and are expanded per tile, where the
// set can (Qu8GemmKernels::expand4 / expand2); else every width is unpacked to int8 panels here.
std::unique_ptr<Kernel> create_qconv2d_u8_igemm(const NodeContext& ctx, const Qu8GemmKernels& ks,
                                                bool packed_weights = false);
std::unique_ptr<Kernel> create_qconv2d_u8_igemm_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_u8_igemm_avx512vnni(const NodeContext& ctx);
// The 8 x 32 VNNI tiles, for maps that fill 32-pixel panels about as well as 16-pixel ones.
std::string check_qconv2d_u8_igemm_8x32(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_u8_igemm_avx512vnni_8x32(const NodeContext& ctx);
std::string check_qconv2d_u8_igemm_8x48(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_u8_igemm_avx512vnni_8x48(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_u8_igemm_avxvnni(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_u8_igemm_neon(const NodeContext& ctx);     // aarch64 builds only
std::unique_ptr<Kernel> create_qconv2d_u8_igemm_neondot(const NodeContext& ctx);  // aarch64 builds only

// 3x3 stride-1 QConv by exact integer Winograd F(2x2, 3x3) on the AVX2 int16 micro-kernels
// (kernels/qu8-winograd/README.md): 2.25x fewer multiply-adds, the same bytes.
std::string check_qconv2d_u8_winograd(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_u8_winograd_avx2(const NodeContext& ctx);

// Depthwise QConv (group == C == M), dilation 1, any kernel, stride and padding whose tap groups
// fit the plan (kernels/qu8-dwconv/qu8_dwconv.h): one channel plane per task.
std::string check_qconv2d_u8_dwconv(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_u8_dwconv(const NodeContext& ctx, const Qu8DwKernel& k);
std::unique_ptr<Kernel> create_qconv2d_u8_dwconv_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_u8_dwconv_avxvnni(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_u8_dwconv_avx512vnni(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_u8_dwconv_neon(const NodeContext& ctx);     // aarch64 builds only
std::unique_ptr<Kernel> create_qconv2d_u8_dwconv_neondot(const NodeContext& ctx);  // aarch64 builds only

// QGemm (A [M, K] u8 x W [N, K] i8), u8 or f32 output: one int16 dot-product pass per row.
std::string check_qgemm_u8_gemv(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qgemm_u8_gemv_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qgemm_u8_gemv_neon(const NodeContext& ctx);  // aarch64 builds only

// QAdd of two u8 tensors of the same shape.
std::string check_qadd_u8(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qadd_u8_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qadd_u8_neon(const NodeContext& ctx);  // aarch64 builds only

}  // namespace lowbit
