// Quantized kernel candidates. Order = preference: VNNI (vpdpbusd, exact u8 x s8) ahead of the
// AVX2 int16 kernels; every candidate is byte-exact against the reference, so the order is about
// speed only.
#include "lowbit/dispatch/table_qu8.h"

#include "lowbit/operators/pool2d_u8.h"
#include "lowbit/operators/qconv2d_u8.h"

namespace lowbit {

std::vector<KernelCandidate> qu8_candidates() {
  using F = Feature;
  const Arch x86 = Arch::x86_64;
  std::vector<KernelCandidate> t;
  // The last field names the micro-kernels each candidate runs (`inspect --kernels` finds them
  // in the binary by name prefix, template arguments aside).
  // Depthwise first: the igemm would run one channel per tile row there.
  t.push_back({"QConv", "qu8-dwconv2d-avx2", x86, {F::avx2, F::fma}, check_qconv2d_u8_dwconv,
               create_qconv2d_u8_dwconv_avx2, {"qu8_dwconv2d_chw__avx2"}});
  t.push_back({"QConv", "qu8-conv2d-igemm-12x16-avx512vnni", x86, {F::avx512f, F::avx512bw, F::avx512vnni},
               check_qconv2d_u8_igemm, create_qconv2d_u8_igemm_avx512vnni,
               {"qu8_gemm_tile16__avx512vnni", "qu8_gemm_tile8__avx512vnni"}});
  t.push_back({"QConv", "qu8-conv2d-igemm-6x16-avxvnni", x86, {F::avx2, F::fma, F::avxvnni}, check_qconv2d_u8_igemm,
               create_qconv2d_u8_igemm_avxvnni, {"qu8_gemm_tile__avxvnni"}});
  t.push_back({"QConv", "qu8-conv2d-igemm-6x16-avx2", x86, {F::avx2, F::fma}, check_qconv2d_u8_igemm,
               create_qconv2d_u8_igemm_avx2, {"qu8_gemm_tile__avx2"}});
  t.push_back({"QGemm", "qu8-fc-gemv-avx2", x86, {F::avx2, F::fma}, check_qgemm_u8_gemv, create_qgemm_u8_gemv_avx2,
               {"qu8_gemv_acc__avx2"}});
  t.push_back({"QAdd", "qu8-vadd-avx2", x86, {F::avx2, F::fma}, check_qadd_u8, create_qadd_u8_avx2,
               {"qu8_vadd__avx2"}});
  // u8 pooling: appended after the fp32 rows of the same ops, which reject u8 input.
  t.push_back({"MaxPool", "qu8-maxpool2d-chw-avx2", x86, {F::avx2, F::fma}, check_maxpool2d_u8,
               create_maxpool2d_u8_avx2, {"qu8_maxpool2d_chw__avx2"}});
  t.push_back({"GlobalAveragePool", "qu8-global-avgpool-avx2", x86, {F::avx2, F::fma}, check_global_avgpool_u8,
               create_global_avgpool_u8_avx2, {"qu8_global_avgpool__avx2"}});
  return t;
}

}  // namespace lowbit
