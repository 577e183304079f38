// The fp32 dispatch table: fast candidates per op, best first. registry.cc appends the int8
// table and then the portable reference candidate of every op.
#include "lowbit/dispatch/registry.h"
#include "lowbit/operators/conv2d_f32.h"
#include "lowbit/operators/fully_connected_f32.h"
#include "lowbit/operators/pool2d_f32.h"

namespace lowbit {

const std::vector<KernelCandidate>& all_candidates() {
  using F = Feature;
  constexpr Arch x86 = Arch::x86_64;
  static const std::vector<KernelCandidate> table = [] {
    std::vector<KernelCandidate> t;
    // The micro-kernels each candidate runs: `inspect --kernels` finds them in the binary by name.
    const std::vector<std::string> f32_gemm = {
        "f32_gemm_1x16__avx2", "f32_gemm_2x16__avx2", "f32_gemm_3x16__avx2", "f32_gemm_4x16__avx2",
        "f32_gemm_5x16__avx2", "f32_gemm_6x16__avx2", "f32_gemm_1x8__avx2",  "f32_gemm_2x8__avx2",
        "f32_gemm_3x8__avx2",  "f32_gemm_4x8__avx2",  "f32_gemm_5x8__avx2",  "f32_gemm_6x8__avx2"};
    // Depthwise first: the igemm would run a single-channel tile row per group there.
    t.push_back({"Conv",
                 "f32-dwconv2d-chw-avx2",
                 x86,
                 {F::avx2, F::fma},
                 check_conv2d_f32_dwconv,
                 create_conv2d_f32_dwconv_avx2,
                 {"f32_dwconv2d_chw__avx2"}});
    t.push_back({"Conv",
                 "f32-conv2d-igemm-6x16-avx2",
                 x86,
                 {F::avx2, F::fma},
                 check_conv2d_f32_igemm,
                 create_conv2d_f32_igemm_avx2,
                 f32_gemm});
    t.push_back({"Gemm", "f32-gemm-fc-6x16-avx2", x86, {F::avx2, F::fma}, check_gemm_f32, create_gemm_f32_avx2,
                 f32_gemm});
    t.push_back(
        {"MatMul", "f32-matmul-fc-6x16-avx2", x86, {F::avx2, F::fma}, check_matmul_f32, create_matmul_f32_avx2,
         f32_gemm});
    t.push_back(
        {"MaxPool", "f32-maxpool2d-chw-avx2", x86, {F::avx2, F::fma}, check_maxpool2d_f32, create_maxpool2d_f32_avx2,
         {"f32_maxpool2d_chw__avx2"}});
    t.push_back({"AveragePool",
                 "f32-avgpool2d-chw-avx2",
                 x86,
                 {F::avx2, F::fma},
                 check_avgpool2d_f32,
                 create_avgpool2d_f32_avx2,
                 {"f32_avgpool2d_chw__avx2"}});
    t.push_back({"GlobalAveragePool",
                 "f32-global-avgpool-avx2",
                 x86,
                 {F::avx2, F::fma},
                 check_global_avgpool_f32,
                 create_global_avgpool_f32_avx2,
                 {"f32_global_avgpool__avx2"}});
    return t;
  }();
  return table;
}

}  // namespace lowbit
