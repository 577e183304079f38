// The dispatch table: fast candidates per op, best first. registry.cc appends the portable
// reference candidate of every op after these.
#include "lowbit/dispatch/registry.h"
#include "lowbit/operators/conv2d_f32.h"
#include "lowbit/operators/fully_connected_f32.h"
#include "lowbit/operators/pool2d_f32.h"

namespace lowbit {

const std::vector<KernelCandidate>& all_candidates() {
  using F = Feature;
  static const std::vector<KernelCandidate> table = [] {
    std::vector<KernelCandidate> t;
    auto add = [&](const char* op, const char* name, std::vector<Feature> fs, std::string (*check)(const NodeContext&),
                   std::unique_ptr<Kernel> (*create)(const NodeContext&)) {
      t.push_back(KernelCandidate{op, name, Arch::x86_64, std::move(fs), check, create});
    };
    // clang-format off
    add("Conv",              "f32-dwconv2d-chw-avx2",        {F::avx2, F::fma}, check_conv2d_f32_dwconv,   create_conv2d_f32_dwconv_avx2);
    add("Conv",              "f32-conv2d-igemm-6x16-avx2",   {F::avx2, F::fma}, check_conv2d_f32_igemm,    create_conv2d_f32_igemm_avx2);
    add("Gemm",              "f32-gemm-fc-6x16-avx2",        {F::avx2, F::fma}, check_gemm_f32,            create_gemm_f32_avx2);
    add("MatMul",            "f32-matmul-fc-6x16-avx2",      {F::avx2, F::fma}, check_matmul_f32,          create_matmul_f32_avx2);
    add("MaxPool",           "f32-maxpool2d-chw-avx2",       {F::avx2, F::fma}, check_maxpool2d_f32,       create_maxpool2d_f32_avx2);
    add("AveragePool",       "f32-avgpool2d-chw-avx2",       {F::avx2, F::fma}, check_avgpool2d_f32,       create_avgpool2d_f32_avx2);
    add("GlobalAveragePool", "f32-global-avgpool-avx2",      {F::avx2, F::fma}, check_global_avgpool_f32,  create_global_avgpool_f32_avx2);
    // clang-format on
    return t;
  }();
  return table;
}

}  // namespace lowbit
