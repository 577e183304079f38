// The fp32 dispatch table: fast candidates per op, best first. registry.cc appends the int8
// table and then the portable reference candidate of every op. One block per architecture; every
// build lists both, but a row's create exists only in builds for its architecture
// (LOWBIT_X86_ONLY / LOWBIT_AARCH64_ONLY), so `explain --target` names foreign kernels too.
#include "lowbit/dispatch/registry.h"
#include "lowbit/kernels/f32-velementwise/velementwise.h"
#include "lowbit/operators/concat.h"
#include "lowbit/operators/conv2d_f32.h"
#include "lowbit/operators/conv2d_winograd_f32.h"
#include "lowbit/operators/depth_to_space.h"
#include "lowbit/operators/strided_copy.h"
#include "lowbit/operators/elementwise_f32.h"
#include "lowbit/operators/fully_connected_f32.h"
#include "lowbit/operators/pool2d_f32.h"
#include "lowbit/operators/resize_f32.h"

namespace lowbit {

const std::vector<KernelCandidate>& all_candidates() {
  using F = Feature;
  constexpr Arch x86 = Arch::x86_64, arm = Arch::aarch64;
  static const std::vector<KernelCandidate> table = [] {
    std::vector<KernelCandidate> t;

    // ---- x86-64 ----
    // The micro-kernels each candidate runs: `inspect --kernels` finds them in the binary by name.
    const std::vector<std::string> f32_gemm = {
        "f32_gemm_1x16__avx2", "f32_gemm_2x16__avx2", "f32_gemm_3x16__avx2", "f32_gemm_4x16__avx2",
        "f32_gemm_5x16__avx2", "f32_gemm_6x16__avx2", "f32_gemm_1x8__avx2",  "f32_gemm_2x8__avx2",
        "f32_gemm_3x8__avx2",  "f32_gemm_4x8__avx2",  "f32_gemm_5x8__avx2",  "f32_gemm_6x8__avx2"};
    // AVX-512 (zmm, 12 x 32 tiles) ahead of AVX2: twice the FMA width where the core has it.
    std::vector<std::string> f32_gemm_avx512;
    for (int nr : {32, 16})
      for (int mr = 1; mr <= 14; ++mr)
        f32_gemm_avx512.push_back("f32_gemm_" + std::to_string(mr) + "x" + std::to_string(nr) + "__avx512");
    const std::vector<Feature> avx512 = {F::avx2, F::fma, F::avx512f, F::avx512bw};
    // Depthwise first: the igemm would run a single-channel tile row per group there.
    // Channels on the lanes ahead of the flat planes where the output plane is small.
    t.push_back({"Conv", "f32-dwconv2d-c16-avx512", x86, avx512, check_conv2d_f32_dwconv_lanes16,
                 LOWBIT_X86_ONLY(create_conv2d_f32_dwconv_lanes_avx512), {"f32_dwconv_lanes__avx512"}});
    t.push_back({"Conv", "f32-dwconv2d-c8-avx2", x86, {F::avx2, F::fma}, check_conv2d_f32_dwconv_lanes8,
                 LOWBIT_X86_ONLY(create_conv2d_f32_dwconv_lanes_avx2), {"f32_dwconv_lanes__avx2"}});
    // Small groups on the lanes ahead of the implicit GEMM, which runs each group as a short tile.
    t.push_back({"Conv", "f32-gconv2d-c16-avx512", x86, avx512, check_conv2d_f32_gconv_lanes16,
                 LOWBIT_X86_ONLY(create_conv2d_f32_dwconv_lanes_avx512), {"f32_gconv_lanes__avx512"}});
    t.push_back({"Conv", "f32-gconv2d-c8-avx2", x86, {F::avx2, F::fma}, check_conv2d_f32_gconv_lanes8,
                 LOWBIT_X86_ONLY(create_conv2d_f32_dwconv_lanes_avx2), {"f32_gconv_lanes__avx2"}});
    t.push_back({"Conv", "f32-dwconv2d-flat-avx512", x86, avx512, check_conv2d_f32_dwconv,
                 LOWBIT_X86_ONLY(create_conv2d_f32_dwconv_avx512),
                 {"f32_dwconv_flat__avx512", "f32_dwconv_store__avx512", "f32_dwconv_direct__avx512"}});
    t.push_back({"Conv", "f32-dwconv2d-flat-avx2", x86, {F::avx2, F::fma}, check_conv2d_f32_dwconv,
                 LOWBIT_X86_ONLY(create_conv2d_f32_dwconv_avx2),
                 {"f32_dwconv_flat__avx2", "f32_dwconv_store__avx2", "f32_dwconv_direct__avx2"}});
    // Winograd ahead of the implicit GEMM where it applies (3x3 stride 1, enough tiles): 2.25x
    // fewer multiplies on the same micro-kernels.
    auto plus = [](std::vector<std::string> v, std::initializer_list<const char*> more) {
      v.insert(v.end(), more.begin(), more.end());
      return v;
    };
    t.push_back({"Conv", "f32-conv2d-winograd-2x2-3x3-avx512", x86, avx512, check_conv2d_f32_winograd,
                 LOWBIT_X86_ONLY(create_conv2d_f32_winograd_avx512),
                 plus(f32_gemm_avx512, {"f32_winograd_input_2x2_3x3__avx512", "f32_winograd_output_2x2_3x3__avx512"})});
    t.push_back({"Conv", "f32-conv2d-winograd-2x2-3x3-avx2", x86, {F::avx2, F::fma}, check_conv2d_f32_winograd,
                 LOWBIT_X86_ONLY(create_conv2d_f32_winograd_avx2),
                 plus(f32_gemm, {"f32_winograd_input_2x2_3x3__avx2", "f32_winograd_output_2x2_3x3__avx2"})});
    t.push_back({"Conv", "f32-conv2d-igemm-12x32-avx512", x86, avx512, check_conv2d_f32_igemm,
                 LOWBIT_X86_ONLY(create_conv2d_f32_igemm_avx512), f32_gemm_avx512});
    t.push_back({"Conv",
                 "f32-conv2d-igemm-6x16-avx2",
                 x86,
                 {F::avx2, F::fma},
                 check_conv2d_f32_igemm,
                 LOWBIT_X86_ONLY(create_conv2d_f32_igemm_avx2),
                 f32_gemm});
    t.push_back({"Gemm", "f32-gemm-fc-12x32-avx512", x86, avx512, check_gemm_f32,
                 LOWBIT_X86_ONLY(create_gemm_f32_avx512), f32_gemm_avx512});
    t.push_back({"Gemm", "f32-gemm-fc-6x16-avx2", x86, {F::avx2, F::fma}, check_gemm_f32,
                 LOWBIT_X86_ONLY(create_gemm_f32_avx2), f32_gemm});
    t.push_back({"MatMul", "f32-matmul-fc-12x32-avx512", x86, avx512, check_matmul_f32,
                 LOWBIT_X86_ONLY(create_matmul_f32_avx512), f32_gemm_avx512});
    t.push_back({"MatMul", "f32-matmul-fc-6x16-avx2", x86, {F::avx2, F::fma}, check_matmul_f32,
                 LOWBIT_X86_ONLY(create_matmul_f32_avx2), f32_gemm});
    t.push_back({"MaxPool", "f32-maxpool2d-chw-avx512", x86, avx512, check_maxpool2d_f32,
                 LOWBIT_X86_ONLY(create_maxpool2d_f32_avx512), {"f32_maxpool2d_chw__avx512"}});
    t.push_back({"MaxPool", "f32-maxpool2d-chw-avx2", x86, {F::avx2, F::fma}, check_maxpool2d_f32,
                 LOWBIT_X86_ONLY(create_maxpool2d_f32_avx2), {"f32_maxpool2d_chw__avx2"}});
    t.push_back({"AveragePool", "f32-avgpool2d-chw-avx512", x86, avx512, check_avgpool2d_f32,
                 LOWBIT_X86_ONLY(create_avgpool2d_f32_avx512), {"f32_avgpool2d_chw__avx512"}});
    t.push_back({"AveragePool", "f32-avgpool2d-chw-avx2", x86, {F::avx2, F::fma}, check_avgpool2d_f32,
                 LOWBIT_X86_ONLY(create_avgpool2d_f32_avx2), {"f32_avgpool2d_chw__avx2"}});
    t.push_back({"GlobalAveragePool",
                 "f32-global-avgpool-avx2",
                 x86,
                 {F::avx2, F::fma},
                 check_global_avgpool_f32,
                 LOWBIT_X86_ONLY(create_global_avgpool_f32_avx2),
                 {"f32_global_avgpool__avx2"}});
    t.push_back({"ReduceMean", "f32-reducemean-spatial-avx2", x86, {F::avx2, F::fma}, check_reducemean_spatial_f32,
                 LOWBIT_X86_ONLY(create_global_avgpool_f32_avx2), {"f32_global_avgpool__avx2"}});

    // ---- AArch64 ----
    const std::vector<std::string> f32_gemm_neon = {
        "f32_gemm_1x16__neon", "f32_gemm_2x16__neon", "f32_gemm_3x16__neon", "f32_gemm_4x16__neon",
        "f32_gemm_5x16__neon", "f32_gemm_6x16__neon", "f32_gemm_1x8__neon",  "f32_gemm_2x8__neon",
        "f32_gemm_3x8__neon",  "f32_gemm_4x8__neon",  "f32_gemm_5x8__neon",  "f32_gemm_6x8__neon"};
    t.push_back({"MaxPool", "f32-maxpool2d-chw-neon", arm, {F::neon}, check_maxpool2d_f32,
                 LOWBIT_AARCH64_ONLY(create_maxpool2d_f32_neon), {"f32_maxpool2d_chw__neon"}});
    t.push_back({"AveragePool", "f32-avgpool2d-chw-neon", arm, {F::neon}, check_avgpool2d_f32,
                 LOWBIT_AARCH64_ONLY(create_avgpool2d_f32_neon), {"f32_avgpool2d_chw__neon"}});
    t.push_back({"Conv", "f32-dwconv2d-flat-neon", arm, {F::neon}, check_conv2d_f32_dwconv,
                 LOWBIT_AARCH64_ONLY(create_conv2d_f32_dwconv_neon), {"f32_dwconv_flat__neon", "f32_dwconv_store__neon"}});
    t.push_back({"Conv", "f32-conv2d-winograd-2x2-3x3-neon", arm, {F::neon}, check_conv2d_f32_winograd,
                 LOWBIT_AARCH64_ONLY(create_conv2d_f32_winograd_neon),
                 plus(f32_gemm_neon, {"f32_winograd_input_2x2_3x3__neon", "f32_winograd_output_2x2_3x3__neon"})});
    t.push_back({"Conv", "f32-conv2d-igemm-6x16-neon", arm, {F::neon}, check_conv2d_f32_igemm,
                 LOWBIT_AARCH64_ONLY(create_conv2d_f32_igemm_neon), f32_gemm_neon});
    t.push_back({"Gemm", "f32-gemm-fc-6x16-neon", arm, {F::neon}, check_gemm_f32,
                 LOWBIT_AARCH64_ONLY(create_gemm_f32_neon), f32_gemm_neon});
    t.push_back({"MatMul", "f32-matmul-fc-6x16-neon", arm, {F::neon}, check_matmul_f32,
                 LOWBIT_AARCH64_ONLY(create_matmul_f32_neon), f32_gemm_neon});
    // ---- element-wise (kernels/f32-velementwise): one row per op and kernel set, best set
    // first; the portable set (every architecture) beats the reference's generic broadcast loop.
    struct EwSet {
      const char* isa;
      Arch arch;
      std::vector<Feature> features;
      std::unique_ptr<Kernel> (*create)(const NodeContext&);
      std::unique_ptr<Kernel> (*create_bn)(const NodeContext&);
    };
    const EwSet sets[] = {
        {"avx512", x86, {F::avx512f}, LOWBIT_X86_ONLY(create_velementwise_avx512), LOWBIT_X86_ONLY(create_batchnorm_avx512)},
        {"avx2", x86, {F::avx2, F::fma}, LOWBIT_X86_ONLY(create_velementwise_avx2), LOWBIT_X86_ONLY(create_batchnorm_avx2)},
        {"neon", arm, {F::neon}, LOWBIT_AARCH64_ONLY(create_velementwise_neon), LOWBIT_AARCH64_ONLY(create_batchnorm_neon)},
        {"scalar", x86, {}, create_velementwise_portable, create_batchnorm_portable}};
    for (const VElementwiseOp& e : velementwise_ops())
      for (const EwSet& set : sets) {
        const std::string isa = set.isa;
        std::vector<std::string> uk;
        if (!set.features.empty()) uk = {std::string("f32_v") + e.fn + "__" + isa};
        t.push_back({e.op, std::string("f32-v") + e.row + "-" + isa, set.arch, set.features, check_velementwise_f32,
                     set.create, uk});
      }
    // BatchNormalization that BN folding left (after a Concat, as in DenseNet): a per-channel affine
    // pass with its fused Relu / Clip, on the same kernel sets.
    for (const EwSet& set : sets) {
      const std::string isa = set.isa;
      std::vector<std::string> uk;
      if (!set.features.empty()) uk = {"f32_vaffine__" + isa};
      t.push_back({"BatchNormalization", "f32-vaffine-batchnorm-" + isa, set.arch, set.features, check_batchnorm_f32,
                   set.create_bn, uk});
    }
    // A Concat the memory plan placed in place (passes/concat_in_place.cc) has nothing to copy.
    t.push_back({"Concat", "x-concat-in-place", x86, {}, check_concat_in_place, create_concat_in_place});
    // Data movement (any element size): DepthToSpace, what a ConvTranspose with kernel = stride
    // lowers to (passes/lower_conv_transpose.cc).
    t.push_back({"DepthToSpace", "x-depth-to-space-scalar", x86, {}, check_depth_to_space, create_depth_to_space});
    // Transpose and constant Slice as runs of contiguous copies (ShuffleNet's channel shuffle moves
    // whole planes, its channel split whole blocks; the reference copies element by element).
    t.push_back({"Transpose", "x-transpose-runs", x86, {}, check_transpose_runs, create_transpose_runs});
    t.push_back({"Slice", "x-slice-runs", x86, {}, check_slice_runs, create_slice_runs});
    // Nearest upsampling by whole factors (FPN / UNet necks): copies, portable, every architecture.
    t.push_back({"Resize", "f32-resize-nearest-int-scalar", x86, {}, check_resize_f32_nearest_int,
                 create_resize_f32_nearest_int});
    return t;
  }();
  return table;
}

}  // namespace lowbit
