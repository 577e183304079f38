#include "lowbit/operators/qconv2d_subbyte.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/qsub-gemm/qsub_gemm.h"
#include "lowbit/operators/qconv2d_u8.h"
#include "lowbit/operators/requant.h"

namespace lowbit {
namespace {

// The largest |code| of a value (x: unsigned, its qmax; w: signed, max(|qmin|, qmax)).
int64_t max_abs_code(const Value& v) {
  const CodeRange r = code_range(v);
  return std::max<int64_t>(std::abs(int64_t{r.lo}), std::abs(int64_t{r.hi}));
}

// The shared part of the three checks: the igemm's own, then an int16 span of >= 8 groups (the
// smallest kernel instantiation).
std::string check_common(const NodeContext& ctx) {
  std::string r = check_qconv2d_u8_igemm(ctx);
  if (!r.empty()) return r;
  const int64_t g = qsub_int16_groups(ctx);
  if (g < 8)
    return "codes " + std::string(dtype_name(code_dtype(ctx.in(0)))) + " x " + dtype_name(code_dtype(ctx.in(1))) +
           ": vpmaddubsw pair sums reach 2 * " + std::to_string(max_abs_code(ctx.in(0))) + " * " +
           std::to_string(max_abs_code(ctx.in(1))) + ", too close to int16's 32767 to sum 8 k groups exactly";
  return "";
}

}  // namespace

std::string qsub_igemm_steps_aside(const NodeContext& ctx) {
  // Where the int8 Winograd kernel applies (3x3 stride 1) it stays ahead: 2.25x fewer
  // multiply-adds at 16 per vpmaddwd beat 32 per vpmaddubsw. Measured per node on ResNet-18
  // (AVX2, EPYC Zen 3, 1 thread): the sub-byte igemm ran at 0.60-0.90x of it at w4a8, w4a4, w2a2.
  if (check_qconv2d_u8_winograd(ctx).empty())
    return "the int8 Winograd F(2x2, 3x3) kernel applies and does 2.25x fewer multiply-adds (measured: this "
           "kernel ran at 0.60-0.90x of it on ResNet-18's 3x3 stride-1 convs)";
  // Strided 1x1 convs with little K: the strided u8 x 4 gather and the tile's int32 round trips
  // outweigh the faster multiply. Measured per node (AVX2 Zen 3, 1 thread): ResNet-18's
  // downsamples (K = 64-256, stride 2) ran at 0.80-1.03x of the int8 igemm at w4a8 / w4a4 / w2a2,
  // while ResNet-50's (K = 256-1024 at stride 2) ran 1.3x faster or more.
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  const int64_t K = p.C_per_group() * p.KH * p.KW;
  // 1x1 convs with K = 64 (ResNet-50's first bottleneck convs): too few k groups per tile to
  // repay the packing; measured 0.89-1.13x at w4a4 and 0.96-1.08x at w4a8 (Zen 4, LOWBIT_ISA=avx2,
  // bench/microbench/qsub_layers).
  if (p.KH * p.KW == 1 && K <= 64)
    return "1x1 conv with K = " + std::to_string(K) + " (<= 64): measured 0.89-1.13x of the int8 igemm";
  if (p.KH * p.KW == 1 && (p.SH > 1 || p.SW > 1) && K <= 256)
    return "1x1 stride-" + std::to_string(std::max(p.SH, p.SW)) + " conv with K = " + std::to_string(K) +
           " (<= 256): measured 0.80-1.03x of the int8 igemm (the strided gather outweighs the faster multiply)";
  return "";
}

int64_t qsub_int16_groups(const NodeContext& ctx) {
  const int64_t pair = 2 * max_abs_code(ctx.in(0)) * max_abs_code(ctx.in(1));
  return pair > 0 ? 32767 / pair : 1 << 20;
}

std::string check_qconv2d_qc4w_igemm(const NodeContext& ctx) {
  if (code_dtype(ctx.in(1)) != DType::i4)
    return std::string("weight codes ") + dtype_name(code_dtype(ctx.in(1))) + ", needs i4";
  return check_common(ctx);
}

std::string check_qconv2d_qc2w_igemm(const NodeContext& ctx) {
  if (code_dtype(ctx.in(1)) != DType::i2)
    return std::string("weight codes ") + dtype_name(code_dtype(ctx.in(1))) + ", needs i2";
  return check_common(ctx);
}

std::string check_qconv2d_qu4_qc8w_igemm(const NodeContext& ctx) {
  if (code_dtype(ctx.in(1)) != DType::i8)
    return std::string("weight codes ") + dtype_name(code_dtype(ctx.in(1))) + ", needs i8";
  const DType a = code_dtype(ctx.in(0));
  if (a != DType::u4 && a != DType::u2) return std::string("input codes ") + dtype_name(a) + ", needs u4 or u2";
  return check_common(ctx);
}

int weight_code_bits(const NodeContext& ctx) { return bit_width(code_dtype(ctx.in(1))); }

std::string register_unpack_fits(const NodeContext& ctx) {
  // 2^(8 - b) |sum (x - zp) w| <= 255 * 128 * K must fit int32 (the reference wraps at 2^32 on
  // larger sums, which the scaled sums would not reproduce), and scale / 2^(8 - b) must stay a
  // normal float for the epilogue to give the same bytes.
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  const int64_t K = p.C_per_group() * p.KH * p.KW;
  if (K > kMaxRegisterUnpackK)
    return "K = " + std::to_string(K) + " (> " + std::to_string(kMaxRegisterUnpackK) +
           "): the codes unpacked as 2^(8 - bits) w could overflow the int32 sums";
  const ops::Requant rq(ctx, p.M, 3);
  const int shift = 8 - weight_code_bits(ctx);
  for (float sc : rq.scale)
    if (!std::isnormal(std::ldexp(sc, -shift)))
      return "a requantization scale below 2^-" + std::to_string(126 - shift) +
             ": divided by 2^" + std::to_string(shift) + " it would not stay a normal float";
  return "";
}

int32_t qsub_neon_x_shift(const NodeContext& ctx) { return code_dtype(ctx.in(0)) == DType::u8 ? 128 : 0; }

std::string check_qconv2d_qsub_neon(const NodeContext& ctx) {
  if (std::string r = check_qconv2d_u8_igemm(ctx); !r.empty()) return r;
  // smull + smlal2 leave two products per int16 lane: 2 * max |x - shift| * max |w| <= 32767.
  const CodeRange x = code_range(ctx.in(0));
  const int32_t shift = qsub_neon_x_shift(ctx);
  const int64_t xmax = std::max<int64_t>(std::abs(int64_t{x.lo} - shift), std::abs(int64_t{x.hi} - shift));
  const int64_t pair = 2 * xmax * max_abs_code(ctx.in(1));
  if (pair > 32767)
    return "codes " + std::string(dtype_name(code_dtype(ctx.in(0)))) + " x " + dtype_name(code_dtype(ctx.in(1))) +
           ": an int16 lane's two 8-bit products reach " + std::to_string(pair) + " (> 32767)";
  return "";
}

std::string packed_igemm_steps_aside(const NodeContext&) {
  // vpdpbusd (and sdot) multiply four int8 pairs per lane whatever the codes' width, so 4- and
  // 2-bit weights save bytes, not multiply-adds, and unpacking them costs ALU work beside it.
  // Measured per node against the int8 row of the same tile (bench/microbench/qsub_layers,
  // ResNet-50's 22 conv shapes, AVX-512 VNNI on a Zen 4 whose 32 MB L3 holds all 25 MB of int8
  // weights): in registers 0.93-1.00x (8 x 32, 8 x 48; 0.70-0.90x on 16 x 16), expanded once per
  // run 0.92-1.05x. The int8 row runs the same codes unpacked, exactly; --on-slow=allow keeps
  // these rows, for half or a quarter of the weight bytes in memory.
  return "4- and 2-bit weights save bytes, not multiply-adds, on dot-product instructions: measured 0.93-1.00x "
         "of the int8 tiles (which run these codes unpacked; --on-slow=allow keeps the packed weights)";
}

// ---- group-wise weights (qbw rows): the same driver, one K block per group ----

std::string check_qconv2d_qbw_kg4(const NodeContext& ctx) { return check_qconv2d_grouped_igemm(ctx, 4); }
std::string check_qconv2d_qbw_kg16(const NodeContext& ctx) { return check_qconv2d_grouped_igemm(ctx, 16); }

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_qconv2d_qbw_igemm_avx512vnni(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_avx512vnni_8x32(), /*packed_weights=*/true);
}
std::unique_ptr<Kernel> create_qconv2d_qbw_igemm_avxvnni(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_avxvnni(), true);
}
// 4- and 2-bit codes on the vpmaddubsw tiles where their int16 spans allow, else the int16 ones.
std::unique_ptr<Kernel> create_qconv2d_qbw_igemm_avx2(const NodeContext& ctx) {
  const Qu8GemmKernels* ks = qsub_gemm_kernels_avx2(static_cast<int>(std::min<int64_t>(qsub_int16_groups(ctx), 1 << 20)));
  return ks ? create_qconv2d_u8_igemm(ctx, *ks, true) : create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_avx2());
}
#endif

#if defined(__aarch64__)
std::unique_ptr<Kernel> create_qconv2d_qbw_igemm_neondot(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_neondot(), true);
}
// 8-bit smull where two products fit an int16 lane, else the int16 smlal tiles.
std::unique_ptr<Kernel> create_qconv2d_qbw_igemm_neon(const NodeContext& ctx) {
  if (check_qconv2d_qsub_neon(ctx).empty())
    return create_qconv2d_u8_igemm(ctx, qsub_gemm_kernels_neon(qsub_neon_x_shift(ctx)), true);
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_neon());
}
#endif

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_qconv2d_qsub_igemm_avx2(const NodeContext& ctx) {
  const int64_t g = qsub_int16_groups(ctx);
  const Qu8GemmKernels* ks = qsub_gemm_kernels_avx2(static_cast<int>(std::min<int64_t>(g, 1 << 20)));
  return create_qconv2d_u8_igemm(ctx, *ks, /*packed_weights=*/true);  // the check guarantees a set
}

// The 8 x 32 and 8 x 48 AVX-512 VNNI tiles unpack 4- and 2-bit weights in registers
// (weight_group); the 16 x 16 one reads them expanded once per run (its 16 rows unpacked in
// registers measured 0.70-0.90x of its int8 tile: one extra instruction per vpdpbusd).
std::unique_ptr<Kernel> create_qconv2d_packed_igemm_avx512vnni(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_avx512vnni(), true);
}
std::unique_ptr<Kernel> create_qconv2d_packed_igemm_avx512vnni_8x32(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_avx512vnni_8x32(weight_code_bits(ctx)), true);
}
std::unique_ptr<Kernel> create_qconv2d_packed_igemm_avx512vnni_8x48(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_avx512vnni_8x48(weight_code_bits(ctx)), true);
}
std::unique_ptr<Kernel> create_qconv2d_packed_igemm_avxvnni(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_avxvnni(), true);
}
#endif

#if defined(__aarch64__)
std::unique_ptr<Kernel> create_qconv2d_packed_igemm_neondot(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_neondot(), true);
}

std::unique_ptr<Kernel> create_qconv2d_qsub_igemm_neon(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qsub_gemm_kernels_neon(qsub_neon_x_shift(ctx)), /*packed_weights=*/true);
}
#endif

}  // namespace lowbit
