// Quantized kernel candidates. Order = preference: VNNI (vpdpbusd, exact u8 x s8) ahead of the
// AVX2 int16 kernels, dot product (sdot) ahead of the NEON int16 kernels; every candidate is
// byte-exact against the reference, so the order is about speed only. One block per architecture,
// as in table.cc: a row's create exists only in builds for its architecture.
#include "lowbit/dispatch/table_qu8.h"

#include <string>

#include "lowbit/ir/op_params.h"

#include "lowbit/operators/binary_conv2d.h"
#include "lowbit/operators/pool2d_b1.h"
#include "lowbit/operators/pool2d_u8.h"
#include "lowbit/operators/qconv2d_subbyte.h"
#include "lowbit/operators/qconv2d_u8.h"
#include "lowbit/operators/qlut_u8.h"
#include "lowbit/operators/qmul_u8.h"
#include "lowbit/operators/quantize_u8.h"

namespace lowbit {

// Where an int8 kernel loses to the fp32 kernel of the same node, measured per node with
// bench/guard_per_node.py --on-slow allow (ResNet-50, ResNet-18, MobileNetV2). The guard keeps
// such nodes in fp32 and says why.
//
// u8 depthwise has no rule of its own: the flat polyphase kernels (kernels/qu8-dwconv) beat fp32 on
// the 28x28 and larger depthwise shapes of MobileNetV2 and EfficientNet-B0 (1.4-2.3x) and tie at
// 14x14 (bench/microbench/dw_layers, Zen 5, AVX-512 VNNI). On 7x7 outputs fp32 with channels on
// the lanes (f32-dwconv2d-c16) is now faster (int8 0.45-0.64x of it: 3x3 960 @7, 5x5 1152 @7, the
// stride-2 layers onto 7x7), but keeping those few layers in fp32 would put a dequantize and a
// quantize around each of them in an int8 network; the int8 kernel needs the same layout.
// Against the AVX-512 fp32 kernel on a target without VNNI the AVX2 u8 rows lose everywhere (below).
// The AVX2 int16 rows (vpmaddwd ymm: 32 multiply-adds a cycle on two ports) against fp32 on a
// target with AVX-512 FMAs and no VNNI (Skylake-SP/X): the fp32 convs run 32 a cycle too, so int8
// has nothing to gain in arithmetic. Measured per node (bench/guard_per_node.py --targets
// skylake-avx512 --on-slow allow, 1 thread, the Xeon capped): every ResNet-50 and MobileNetV2
// igemm / Winograd node slower in int8, ResNet-50 as a whole 0.95x (65.7 against 62.3 ms), and the
// AVX2 u8 depthwise 0.64-0.85x of the fp32 AVX-512 one. An AVX-512BW vpmaddwd zmm kernel would
// not help: on those cores 512-bit vpmaddwd and the vpaddd after it share ports 0 and 5, 32
// multiply-adds a cycle again; VNNI fuses the add (64).
std::string avx2_int16_vs_avx512_fp32(const NodeContext& ctx) {
  const Target& t = ctx.target;
  if (!t.has(Feature::avx512f) || t.has(Feature::avx512vnni) || t.has(Feature::avxvnni)) return "";
  return "target " + t.name + " runs the fp32 conv on AVX-512 FMAs, as fast as vpmaddwd ymm multiplies int16, "
         "without VNNI: measured 0.95x of fp32 on ResNet-50, 0.64-0.85x on MobileNetV2's depthwise convs "
         "(Xeon capped to skylake-avx512)";
}

// There was a second rule, K < 48 on the AVX2 igemm (measured 2.6x slower than fp32 when the int8
// igemm packed its input per tile). Remeasured with today's kernels (Xeon capped to znver3, 1 thread,
// bench --profile, each node alone): MobileNetV2's 8 such convs run 1.19-1.68x faster in int8 (w4a8:
// 1.07-1.76x), EfficientNet-B0's 20 1.57-11x (squeeze-excite's fc2 on 1x1 maps 5-11x), MobileNetV3-small's
// 13 1.12-3.7x but one 1-microsecond fc1 (0.78x); Zen 3 had measured 1.15-1.5x. Keeping them cost the
// Quantize/Dequantize pairs around them besides (0.2-0.8 ms): whole models ran 1.13-1.26x faster
// without the rule (MobileNetV2 9.06 -> 7.76 ms, EfficientNet-B0 15.2 -> 12.1, MobileNetV3-small 2.56
// -> 2.27). The rule had also stood in for accuracy (PaddleOCR's direction classifier flipped a
// confident answer with those layers in int8); with per-tensor calibration it now agrees with fp32 on
// 20 of 20 lines either way (tests/scripts/test_paddleocr_cls.sh), and accuracy is for
// `--precision auto --max-drop` and --layer-precision to decide, not the speed guard.

std::vector<KernelCandidate> qu8_candidates() {
  using F = Feature;
  const Arch x86 = Arch::x86_64, arm = Arch::aarch64;
  std::vector<KernelCandidate> t;
  // The codes each sub-byte row reads natively (KernelCandidate::Codes): activation codes in u8
  // storage, weight codes packed.
  using Codes = KernelCandidate::Codes;
  const Codes xnor = {{DType::u1}, {DType::b1}}, narrow_x = {{DType::u4, DType::u2}, {DType::i8}};
  const Codes qc4w = {{DType::u8, DType::u4, DType::u2}, {DType::i4}}, qc2w = {{DType::u8, DType::u4, DType::u2}, {DType::i2}};

  // Group-wise weights of any width (qbw: blockwise, XNNPACK's qb4w generalised): one K block per
  // group on each ISA's tiles; the other QConv rows refuse such weights.
  const Codes qbw = {{DType::u8, DType::u4, DType::u2}, {DType::i8, DType::i4, DType::i2}};

  // ---- x86-64 ----
  t.push_back({"QConv", "qu8-qbw-conv2d-igemm-8x32-avx512vnni", x86, {F::avx512f, F::avx512bw, F::avx512vnni},
               check_qconv2d_qbw_kg4, LOWBIT_X86_ONLY(create_qconv2d_qbw_igemm_avx512vnni),
               {"qu8_gemm_wide__avx512vnni", "qu8_group_fma__avx512vnni", "qu8_group_finish__avx512vnni"}, nullptr,
               qbw});
  t.push_back({"QConv", "qu8-qbw-conv2d-igemm-6x16-avxvnni", x86, {F::avx2, F::fma, F::avxvnni}, check_qconv2d_qbw_kg4,
               LOWBIT_X86_ONLY(create_qconv2d_qbw_igemm_avxvnni),
               {"qu8_gemm_tile__avxvnni", "qu8_group_fma__avxvnni", "qu8_group_finish__avxvnni"}, nullptr, qbw});
  t.push_back({"QConv", "qu8-qbw-conv2d-igemm-6x16-avx2", x86, {F::avx2, F::fma}, check_qconv2d_qbw_kg4,
               LOWBIT_X86_ONLY(create_qconv2d_qbw_igemm_avx2),
               {"qsub_gemm_tile__avx2", "qu8_gemm_tile__avx2", "qsub_group_fma__avx2", "qsub_group_finish__avx2"},
               nullptr, qbw});
  // The last field names the micro-kernels each candidate runs (`inspect --kernels` finds them
  // in the binary by name prefix, template arguments aside).
  // Binary (w1a1) first: XOR + popcount does 64 multiply-adds per word (kernels/qb1-gemm/README.md);
  // it takes only u1 x b1 nodes, which every other QConv row runs as int8 codes.
  t.push_back({"QConv", "qu1-qb1w-conv2d-xnor-8x16-avx512vpopcntdq", x86, {F::avx512f, F::avx512vpopcntdq},
               check_qconv2d_qu1_qb1w_xnor, LOWBIT_X86_ONLY(create_binary_conv2d_avx512vpopcntdq),
               {"qb1_gemm_tile__avx512vpopcntdq"}, nullptr, xnor});
  t.push_back({"QConv", "qu1-qb1w-conv2d-xnor-4x8-avx2", x86, {F::avx2}, check_qconv2d_qu1_qb1w_xnor,
               LOWBIT_X86_ONLY(create_binary_conv2d_avx2), {"qb1_gemm_tile__avx2"}, nullptr, xnor});
  // BinaryConv (imported binary models, passes/binarize.cc): the sign is taken while packing, from
  // f32 (a model run in fp32) or from u8 codes (quantized); every row is exact, as the reference.
  // Three input domains: f32, u8 codes, packed signs (qb1: b1 activations, read without packing).
  using Check = std::string (*)(const NodeContext&);
  struct BinaryInput {
    const char* name;
    Check check;
    Codes codes;
  };
  const BinaryInput binary_inputs[] = {{"f32", check_binary_conv2d_f32, {{DType::f32}, {DType::b1}}},
                                       {"qu8", check_binary_conv2d_qu8, {{DType::u8}, {DType::b1}}},
                                       {"qb1", check_binary_conv2d_qb1, {{DType::b1}, {DType::b1}}}};
  for (auto [dt, check, codes] : binary_inputs) {
    t.push_back({"BinaryConv", std::string(dt) + "-qb1w-conv2d-xnor-8x16-avx512vpopcntdq", x86,
                 {F::avx512f, F::avx512vpopcntdq}, check,
                 LOWBIT_X86_ONLY(create_binary_conv2d_avx512vpopcntdq), {"qb1_gemm_tile__avx512vpopcntdq"}, nullptr,
                 codes});
    t.push_back({"BinaryConv", std::string(dt) + "-qb1w-conv2d-xnor-4x8-avx2", x86, {F::avx2},
                 check, LOWBIT_X86_ONLY(create_binary_conv2d_avx2),
                 {"qb1_gemm_tile__avx2"}, nullptr, codes});
    t.push_back({"BinaryConv", std::string(dt) + "-qb1w-conv2d-xnor-4x8-neon", arm, {F::neon},
                 check, LOWBIT_AARCH64_ONLY(create_binary_conv2d_neon),
                 {"qb1_gemm_tile__neon"}, nullptr, codes});
  }
  // Depthwise first: the igemm would run one channel per tile row there. 16 outputs x G taps per
  // multiply-add (kernels/qu8-dwconv/README.md).
  t.push_back({"QConv", "qu8-qc8w-dwconv2d-16x4-avx512vnni", x86, {F::avx512f, F::avx512bw, F::avx512vnni},
               check_qconv2d_u8_dwconv, LOWBIT_X86_ONLY(create_qconv2d_u8_dwconv_avx512vnni),
               {"qu8_dwconv2d_flat__avx512vnni"}});
  t.push_back({"QConv", "qu8-qc8w-dwconv2d-16x4-avxvnni", x86, {F::avx2, F::fma, F::avxvnni}, check_qconv2d_u8_dwconv,
               LOWBIT_X86_ONLY(create_qconv2d_u8_dwconv_avxvnni), {"qu8_dwconv2d_flat__avxvnni"}});
  t.push_back({"QConv", "qu8-qc8w-dwconv2d-16x2-avx2", x86, {F::avx2, F::fma}, check_qconv2d_u8_dwconv,
               LOWBIT_X86_ONLY(create_qconv2d_u8_dwconv_avx2), {"qu8_dwconv2d_flat__avx2"}, avx2_int16_vs_avx512_fp32});
  // Narrow codes on VNNI: exact Winograd F(2x2, 3x3) with vpdpbusd (|U'| <= 126 in s8, V + 64 in u8),
  // 2.25x fewer multiply-adds than the direct tiles (kernels/qu8-winograd/README.md).
  t.push_back({"QConv", "qu4-qc4w-conv2d-winograd-2x2-3x3-avx512vnni", x86,
               {F::avx2, F::fma, F::avx512f, F::avx512bw, F::avx512vnni}, check_qconv2d_qsub_winograd_vnni,
               LOWBIT_X86_ONLY(create_qconv2d_qsub_winograd_avx512vnni),
               {"qu8_gemm_tile16__avx512vnni", "qu8_winograd_input_u8x4_2x2_3x3__avx512vnni",
                "qu8_winograd_output_2x2_3x3__avx512vnni"},
               nullptr, {{DType::u4, DType::u2}, {DType::i4, DType::i2}}});
  // The igemm tiles, per tile: 4- and 2-bit weights kept packed and expanded per tile (qc4w, qc2w:
  // kernels/qsub-gemm/qsub_panel.h), then the int8 row, which runs any weight codes unpacked to
  // int8 panels at creation. The packed rows' check says where the expansion pays.
  using Create = std::unique_ptr<Kernel> (*)(const NodeContext&);
  struct IgemmTile {
    const char* tile;
    std::vector<Feature> features;
    Check check, check_qc4w, check_qc2w;
    Create create, create_packed;
    std::vector<std::string> ukernels;
  };
  const std::vector<Feature> vnni512 = {F::avx512f, F::avx512bw, F::avx512vnni}, vnni256 = {F::avx2, F::fma, F::avxvnni};
  const IgemmTile x86_tiles[] = {
      {"8x32-avx512vnni", vnni512, check_qconv2d_u8_igemm_8x32,
       check_qconv2d_packed_igemm<check_qconv2d_u8_igemm_8x32, DType::i4, true>,
       check_qconv2d_packed_igemm<check_qconv2d_u8_igemm_8x32, DType::i2, true>,
       LOWBIT_X86_ONLY(create_qconv2d_u8_igemm_avx512vnni_8x32),
       LOWBIT_X86_ONLY(create_qconv2d_packed_igemm_avx512vnni_8x32),
       {"qu8_gemm_wide__avx512vnni", "qu8_gemm_tile16__avx512vnni", "qu8_gemm_narrow__avx512vnni"}},
      {"8x48-avx512vnni", vnni512, check_qconv2d_u8_igemm_8x48,
       check_qconv2d_packed_igemm<check_qconv2d_u8_igemm_8x48, DType::i4, true>,
       check_qconv2d_packed_igemm<check_qconv2d_u8_igemm_8x48, DType::i2, true>,
       LOWBIT_X86_ONLY(create_qconv2d_u8_igemm_avx512vnni_8x48),
       LOWBIT_X86_ONLY(create_qconv2d_packed_igemm_avx512vnni_8x48),
       {"qu8_gemm_wide__avx512vnni", "qu8_gemm_tile16__avx512vnni", "qu8_gemm_narrow__avx512vnni"}},
      {"16x16-avx512vnni", vnni512, check_qconv2d_u8_igemm,
       check_qconv2d_packed_igemm<check_qconv2d_u8_igemm, DType::i4>,
       check_qconv2d_packed_igemm<check_qconv2d_u8_igemm, DType::i2>,
       LOWBIT_X86_ONLY(create_qconv2d_u8_igemm_avx512vnni), LOWBIT_X86_ONLY(create_qconv2d_packed_igemm_avx512vnni),
       {"qu8_gemm_tile16__avx512vnni", "qu8_gemm_tile8__avx512vnni", "qu8_gemm_narrow__avx512vnni"}},
      {"6x16-avxvnni", vnni256, check_qconv2d_u8_igemm,
       check_qconv2d_packed_igemm<check_qconv2d_u8_igemm, DType::i4>,
       check_qconv2d_packed_igemm<check_qconv2d_u8_igemm, DType::i2>,
       LOWBIT_X86_ONLY(create_qconv2d_u8_igemm_avxvnni), LOWBIT_X86_ONLY(create_qconv2d_packed_igemm_avxvnni),
       {"qu8_gemm_tile__avxvnni"}},
  };
  auto push_igemm_tile = [&t, &qc4w, &qc2w](const IgemmTile& it, Arch arch, const char* isa) {
    std::vector<std::string> packed_uk = it.ukernels;
    packed_uk.push_back(std::string("qsub_expand_w4__") + isa);
    t.push_back({"QConv", std::string("qu8-qc4w-conv2d-igemm-") + it.tile, arch, it.features, it.check_qc4w,
                 it.create_packed, packed_uk, nullptr, qc4w, packed_igemm_steps_aside});
    packed_uk.back() = std::string("qsub_expand_w2__") + isa;
    t.push_back({"QConv", std::string("qu8-qc2w-conv2d-igemm-") + it.tile, arch, it.features, it.check_qc2w,
                 it.create_packed, packed_uk, nullptr, qc2w, packed_igemm_steps_aside});
    t.push_back({"QConv", std::string("qu8-qc8w-conv2d-igemm-") + it.tile, arch, it.features, it.check, it.create,
                 it.ukernels});
  };
  for (const IgemmTile& it : x86_tiles)
    push_igemm_tile(it, x86, it.features.size() == 3 && it.features[2] == F::avx512vnni ? "avx512vnni" : "avxvnni");
  // Sub-byte codes (kernels/qsub-gemm/README.md): vpmaddubsw is exact when a 4- or 2-bit code
  // bounds every product, so one multiply instruction does 32 multiply-adds instead of the int8
  // kernels' 16; below the VNNI rows, whose vpdpbusd already does 32 in one.
  struct QsubRow {
    const char* name;
    Check check;
    Codes codes;
    std::vector<std::string> ukernels;
  };
  const QsubRow qsub_rows[] = {
      {"qu8-qc4w-conv2d-igemm-6x16c4-avx2", check_qconv2d_qc4w_igemm, qc4w, {"qsub_gemm_tile__avx2", "qsub_expand_w4__avx2"}},
      {"qu8-qc2w-conv2d-igemm-6x16c4-avx2", check_qconv2d_qc2w_igemm, qc2w, {"qsub_gemm_tile__avx2", "qsub_expand_w2__avx2"}},
      {"qu4-qc8w-conv2d-igemm-6x16c4-avx2", check_qconv2d_qu4_qc8w_igemm, narrow_x, {"qsub_gemm_tile__avx2"}}};
  for (const QsubRow& r : qsub_rows)
    t.push_back({"QConv", r.name, x86, {F::avx2, F::fma}, r.check, LOWBIT_X86_ONLY(create_qconv2d_qsub_igemm_avx2),
                 r.ukernels, avx2_int16_vs_avx512_fp32, r.codes, qsub_igemm_steps_aside});
  // Exact integer Winograd ahead of the AVX2 igemm (below the VNNI kernels: on vpdpbusd, int16
  // operands would halve the multiply rate and eat the 2.25x).
  t.push_back({"QConv", "qu8-qc8w-conv2d-winograd-2x2-3x3-avx2", x86, {F::avx2, F::fma}, check_qconv2d_u8_winograd,
               LOWBIT_X86_ONLY(create_qconv2d_u8_winograd_avx2),
               {"qu8_gemm_tile__avx2", "qu8_winograd_input_2x2_3x3__avx2", "qu8_winograd_output_2x2_3x3__avx2"},
               avx2_int16_vs_avx512_fp32});
  t.push_back({"QConv", "qu8-qc8w-conv2d-igemm-6x16-avx2", x86, {F::avx2, F::fma}, check_qconv2d_u8_igemm,
               LOWBIT_X86_ONLY(create_qconv2d_u8_igemm_avx2), {"qu8_gemm_tile__avx2"}, avx2_int16_vs_avx512_fp32});
  t.push_back({"QGemm", "qu8-qc8w-fc-gemv-avx2", x86, {F::avx2, F::fma}, check_qgemm_u8_gemv,
               LOWBIT_X86_ONLY(create_qgemm_u8_gemv_avx2), {"qu8_gemv_acc__avx2"}});
  t.push_back({"QAdd", "qu8-vadd-avx2", x86, {F::avx2, F::fma}, check_qadd_u8, LOWBIT_X86_ONLY(create_qadd_u8_avx2),
               {"qu8_vadd__avx2"}});
  // Tables of codes (QLut): two vpermi2b per 64 bytes; the PP-OCRv4 detector's 34 HardSwish tables
  // took 11 of its 37 int8 ms in the scalar loop.
  t.push_back({"QLut", "qu8-lut-64-avx512vbmi", x86, {F::avx512f, F::avx512bw, F::avx512vbmi}, check_qlut_u8,
               LOWBIT_X86_ONLY(create_qlut_u8_avx512vbmi), {"qu8_lut__avx512vbmi"}});
  // Without VBMI: 16 vpshufb per 32 bytes over the table's 16-entry slices.
  t.push_back({"QLut", "qu8-lut-32-avx2", x86, {F::avx2}, check_qlut_u8, LOWBIT_X86_ONLY(create_qlut_u8_avx2),
               {"qu8_lut__avx2"}});
  t.push_back({"QMul", "qu8-vmul-avx2", x86, {F::avx2, F::fma}, check_qmul_u8, LOWBIT_X86_ONLY(create_qmul_u8_avx2),
               {"qu8_vmul_k1__avx2", "qu8_vmul_kn__avx2"}});
  // Per-tensor u8 only; per-axis and i8 fall through to the reference.
  t.push_back({"QuantizeLinear", "qu8-quantize-avx2", x86, {F::avx2, F::fma}, check_quantize_u8,
               LOWBIT_X86_ONLY(create_quantize_u8_avx2), {"qu8_quantize__avx2"}});
  t.push_back({"DequantizeLinear", "qu8-dequantize-avx2", x86, {F::avx2, F::fma}, check_dequantize_u8,
               LOWBIT_X86_ONLY(create_dequantize_u8_avx2), {"qu8_dequantize__avx2"}});
  // u8 pooling: appended after the fp32 rows of the same ops, which reject u8 input.
  t.push_back({"MaxPool", "qu8-maxpool2d-chw-avx2", x86, {F::avx2, F::fma}, check_maxpool2d_u8,
               LOWBIT_X86_ONLY(create_maxpool2d_u8_avx2), {"qu8_maxpool2d_chw__avx2"}});
  t.push_back({"AveragePool", "qu8-avgpool2d-chw-avx2", x86, {F::avx2, F::fma}, check_avgpool2d_u8,
               LOWBIT_X86_ONLY(create_avgpool2d_u8_avx2), {"qu8_avgpool2d_chw__avx2"}});
  t.push_back({"GlobalAveragePool", "qu8-global-avgpool-avx2", x86, {F::avx2, F::fma}, check_global_avgpool_u8,
               LOWBIT_X86_ONLY(create_global_avgpool_u8_avx2), {"qu8_global_avgpool__avx2"}});

  // ---- AArch64 ----
  t.push_back({"QConv", "qu8-qbw-conv2d-igemm-6x16-neondot", arm, {F::neon, F::dotprod}, check_qconv2d_qbw_kg4,
               LOWBIT_AARCH64_ONLY(create_qconv2d_qbw_igemm_neondot),
               {"qu8_gemm_tile__neondot", "qu8_group_fma__neondot", "qu8_group_finish__neondot"}, nullptr, qbw});
  t.push_back({"QConv", "qu8-qbw-conv2d-igemm-4x4c16-neon", arm, {F::neon}, check_qconv2d_qbw_kg16,
               LOWBIT_AARCH64_ONLY(create_qconv2d_qbw_igemm_neon),
               {"qsub_gemm_tile__neon", "qu8_gemm_tile__neon", "qsub_group_fma__neon", "qsub_group_finish__neon"},
               nullptr, qbw});
  t.push_back({"QConv", "qu1-qb1w-conv2d-xnor-4x8-neon", arm, {F::neon}, check_qconv2d_qu1_qb1w_xnor,
               LOWBIT_AARCH64_ONLY(create_binary_conv2d_neon), {"qb1_gemm_tile__neon"}, nullptr, xnor});
  t.push_back({"QConv", "qu8-qc8w-dwconv2d-16x4-neondot", arm, {F::neon, F::dotprod}, check_qconv2d_u8_dwconv,
               LOWBIT_AARCH64_ONLY(create_qconv2d_u8_dwconv_neondot), {"qu8_dwconv2d_flat__neondot"}});
  t.push_back({"QConv", "qu8-qc8w-dwconv2d-16x2-neon", arm, {F::neon}, check_qconv2d_u8_dwconv,
               LOWBIT_AARCH64_ONLY(create_qconv2d_u8_dwconv_neon), {"qu8_dwconv2d_flat__neon"}});
  push_igemm_tile({"6x16-neondot", {F::neon, F::dotprod}, check_qconv2d_u8_igemm,
                   check_qconv2d_packed_igemm<check_qconv2d_u8_igemm, DType::i4>,
                   check_qconv2d_packed_igemm<check_qconv2d_u8_igemm, DType::i2>,
                   LOWBIT_AARCH64_ONLY(create_qconv2d_u8_igemm_neondot),
                   LOWBIT_AARCH64_ONLY(create_qconv2d_packed_igemm_neondot), {"qu8_gemm_tile__neondot"}},
                  arm, "neondot");
  // Sub-byte codes on ARMv8.0 (kernels/qsub-gemm/README.md): 8-bit smull / smlal2 products are exact
  // when one side is narrow, 8 multiply-adds per instruction against the int16 kernel's 4; below the
  // dot-product rows, whose sdot does 16 with any codes.
  const QsubRow neon_qsub_rows[] = {
      {"qu8-qc4w-conv2d-igemm-4x4c16-neon", check_qconv2d_qsub_neon_codes<DType::i4>, qc4w,
       {"qsub_gemm_tile__neon", "qsub_expand_w4__neon"}},
      {"qu8-qc2w-conv2d-igemm-4x4c16-neon", check_qconv2d_qsub_neon_codes<DType::i2>, qc2w,
       {"qsub_gemm_tile__neon", "qsub_expand_w2__neon"}},
      {"qu4-qc8w-conv2d-igemm-4x4c16-neon", check_qconv2d_qsub_neon_codes<DType::i8, true>, narrow_x,
       {"qsub_gemm_tile__neon"}}};
  for (const QsubRow& r : neon_qsub_rows)
    t.push_back({"QConv", r.name, arm, {F::neon}, r.check, LOWBIT_AARCH64_ONLY(create_qconv2d_qsub_igemm_neon),
                 r.ukernels, nullptr, r.codes});
  t.push_back({"QConv", "qu8-qc8w-conv2d-igemm-6x16-neon", arm, {F::neon}, check_qconv2d_u8_igemm,
               LOWBIT_AARCH64_ONLY(create_qconv2d_u8_igemm_neon), {"qu8_gemm_tile__neon"}});
  t.push_back({"QGemm", "qu8-qc8w-fc-gemv-neon", arm, {F::neon}, check_qgemm_u8_gemv,
               LOWBIT_AARCH64_ONLY(create_qgemm_u8_gemv_neon), {"qu8_gemv_acc__neon"}});
  t.push_back({"QAdd", "qu8-vadd-neon", arm, {F::neon}, check_qadd_u8, LOWBIT_AARCH64_ONLY(create_qadd_u8_neon),
               {"qu8_vadd__neon"}});
  t.push_back({"QLut", "qu8-lut-16-neon", arm, {F::neon}, check_qlut_u8, LOWBIT_AARCH64_ONLY(create_qlut_u8_neon),
               {"qu8_lut__neon"}});
  t.push_back({"QMul", "qu8-vmul-neon", arm, {F::neon}, check_qmul_u8, LOWBIT_AARCH64_ONLY(create_qmul_u8_neon),
               {"qu8_vmul_k1__neon", "qu8_vmul_kn__neon"}});
  t.push_back({"QuantizeLinear", "qu8-quantize-neon", arm, {F::neon}, check_quantize_u8,
               LOWBIT_AARCH64_ONLY(create_quantize_u8_neon), {"qu8_quantize__neon"}});
  t.push_back({"DequantizeLinear", "qu8-dequantize-neon", arm, {F::neon}, check_dequantize_u8,
               LOWBIT_AARCH64_ONLY(create_dequantize_u8_neon), {"qu8_dequantize__neon"}});
  t.push_back({"MaxPool", "qu8-maxpool2d-chw-neon", arm, {F::neon}, check_maxpool2d_u8,
               LOWBIT_AARCH64_ONLY(create_maxpool2d_u8_neon), {"qu8_maxpool2d_chw__neon"}});
  t.push_back({"AveragePool", "qu8-avgpool2d-chw-neon", arm, {F::neon}, check_avgpool2d_u8,
               LOWBIT_AARCH64_ONLY(create_avgpool2d_u8_neon), {"qu8_avgpool2d_chw__neon"}});
  t.push_back({"GlobalAveragePool", "qu8-global-avgpool-neon", arm, {F::neon}, check_global_avgpool_u8,
               LOWBIT_AARCH64_ONLY(create_global_avgpool_u8_neon), {"qu8_global_avgpool__neon"}});

  // ---- portable ---- (after every SIMD row: on x86-64 it ran at 0.7x of the AVX2 int8 igemm on
  // ResNet-18's 3x3 layers, bench/microbench/qb1_layers; it beats the reference kernel everywhere)
  t.push_back({"QConv", "qu1-qb1w-conv2d-xnor-2x4-scalar", x86, {}, check_qconv2d_qu1_qb1w_xnor,
               create_binary_conv2d_portable, {}, nullptr, xnor});
  for (auto [dt, check, codes] : binary_inputs)
    t.push_back({"BinaryConv", std::string(dt) + "-qb1w-conv2d-xnor-2x4-scalar", x86, {}, check,
                 create_binary_conv2d_portable, {}, nullptr, codes});
  // Element-wise maps on codes (HardSwish, Sigmoid, SiLU...): one lookup in a 256-entry table per
  // byte, in place of DequantizeLinear, the fp32 op and QuantizeLinear.
  t.push_back({"QLut", "qu8-lut-scalar", x86, {}, check_qlut_u8, create_qlut_u8_scalar, {"qu8_lut__scalar"}});
  // Packed signs: an AND of words, 64 channels at a time (portable C++ the compiler vectorises).
  t.push_back({"MaxPool", "qb1-maxpool2d-nhwc-and", x86, {}, check_maxpool2d_b1, create_maxpool2d_b1, {}, nullptr,
               {{DType::b1}, {}}});
  return t;
}

}  // namespace lowbit
