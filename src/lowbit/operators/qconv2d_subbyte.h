#pragma once
// QConv on sub-byte codes: the implicit GEMM driver (qconv2d_u8) over the vpmaddubsw kernels of
// kernels/qsub-gemm, which are exact only when 4- or 2-bit codes bound the products.
#include <memory>
#include <string>

#include "lowbit/ir/graph.h"
#include "lowbit/kernels/qu8-winograd/qu8_winograd.h"
#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

// k groups (4 k values each) whose vpmaddubsw pair sums fit int16 for this node's code ranges:
// floor(32767 / (2 * max x * max |w|)); 0 when not even one fits (u8 x i8 codes).
int64_t qsub_int16_groups(const NodeContext& ctx);

// The three rows of the table: 4-bit weights, 2-bit weights, int8 weights with 4- or 2-bit
// activations. Each is the igemm check plus its codes and an int16 span of at least 8 groups.
std::string check_qconv2d_qc4w_igemm(const NodeContext& ctx);
std::string check_qconv2d_qc2w_igemm(const NodeContext& ctx);
std::string check_qconv2d_qu4_qc8w_igemm(const NodeContext& ctx);
// Their speed rule (KernelCandidate::steps_aside): int8 Winograd, small-K strided 1x1 convs.
std::string qsub_igemm_steps_aside(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_qsub_igemm_avx2(const NodeContext& ctx);

// ARMv8.0 NEON rows for sub-byte codes (kernels/qsub-gemm/neon.cc): 8-bit smull / smlal2, exact when
// two products fit an int16 lane. The table's rows add their codes (i4 / i2 weights, or i8 weights
// with u4 / u2 activations) to this check.
std::string check_qconv2d_qsub_neon(const NodeContext& ctx);
template <DType W, bool NarrowActs = false>
std::string check_qconv2d_qsub_neon_codes(const NodeContext& ctx) {
  if (code_dtype(ctx.in(1)) != W)
    return std::string("weight codes ") + dtype_name(code_dtype(ctx.in(1))) + ", needs " + dtype_name(W);
  const DType a = code_dtype(ctx.in(0));
  if (NarrowActs && a != DType::u4 && a != DType::u2)
    return std::string("input codes ") + dtype_name(a) + ", needs u4 or u2";
  return check_qconv2d_qsub_neon(ctx);
}
std::unique_ptr<Kernel> create_qconv2d_qsub_igemm_neon(const NodeContext& ctx);  // aarch64 builds only

// Group-wise weights (QuantParams::block_size, `--group-size`, ONNX blocked DequantizeLinear): the
// qbw rows, one per ISA, run the implicit GEMM with one K block per group (qconv2d_u8.h); the check
// takes the k group of the set the row uses.
std::string check_qconv2d_qbw_kg4(const NodeContext& ctx);
std::string check_qconv2d_qbw_kg16(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_qbw_igemm_avx512vnni(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_qbw_igemm_avxvnni(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_qbw_igemm_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_qbw_igemm_neondot(const NodeContext& ctx);  // aarch64 builds only
std::unique_ptr<Kernel> create_qconv2d_qbw_igemm_neon(const NodeContext& ctx);     // aarch64 builds only

// Exact Winograd F(2x2, 3x3) on the AVX-512 VNNI kernels for narrow codes (4- or 2-bit activations
// and weights): U' and V + 64 fit vpdpbusd's s8 x u8, so the 16 GEMMs run at the int8 rate with
// 2.25x fewer multiply-adds than the direct tiles (operators/qconv2d_winograd_u8.cc).
std::string check_qconv2d_qsub_winograd_vnni(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_qsub_winograd_avx512vnni(const NodeContext& ctx);
// The same driver on a given set of its kernels (tests/simde: the emulated AVX-512 ones).
std::unique_ptr<Kernel> create_qconv2d_qsub_winograd(const NodeContext& ctx, const Qu8WinogradU8x4Kernels& k);

// Packed-weight rows (kernels/qsub-gemm/qsub_panel.h): an int8 row's tiles with 4- or 2-bit
// weights kept packed in memory and expanded per tile. The check is the int8 row's own (Inner),
// the weight codes W, and where the expansion pays (packed_igemm_pays).
// The packed rows' speed rule (KernelCandidate::steps_aside): where expanding or unpacking the
// codes measured slower than the int8 row running them unpacked.
std::string packed_igemm_steps_aside(const NodeContext& ctx);
// Tiles that unpack the codes in registers (Qu8GemmKernels::weight_bits) sum 2^(8 - bits) w:
// "" when that stays exact for this node (K, and the scaled requantization scale).
inline constexpr int64_t kMaxRegisterUnpackK = 65793;  // 255 * 128 * K < 2^31
std::string register_unpack_fits(const NodeContext& ctx);
int weight_code_bits(const NodeContext& ctx);
template <std::string (*Inner)(const NodeContext&), DType W, bool InRegisters = false>
std::string check_qconv2d_packed_igemm(const NodeContext& ctx) {
  if (code_dtype(ctx.in(1)) != W)
    return std::string("weight codes ") + dtype_name(code_dtype(ctx.in(1))) + ", needs " + dtype_name(W);
  if (std::string r = Inner(ctx); !r.empty()) return r;
  if (InRegisters) return register_unpack_fits(ctx);
  return "";
}
std::unique_ptr<Kernel> create_qconv2d_packed_igemm_avx512vnni(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_packed_igemm_avx512vnni_8x32(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_packed_igemm_avx512vnni_8x48(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_packed_igemm_avxvnni(const NodeContext& ctx);
std::unique_ptr<Kernel> create_qconv2d_packed_igemm_neondot(const NodeContext& ctx);  // aarch64 builds only

}  // namespace lowbit
