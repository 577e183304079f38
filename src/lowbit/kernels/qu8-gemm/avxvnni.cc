// AVX-VNNI qu8 GEMM (VEX vpdpbusd on ymm: Alder Lake and later, Zen 5): u8 x s8 -> int32, exact.
// Same tile as the AVX2 kernels (MR x 16 as two ymm per channel row, 6 x 16 = 12 accumulators),
// but one instruction per 32 MACs instead of vpmaddwd + vpaddd per 16, and the activations stay
// u8 (4 k per int32 lane). The zero point of x enters through row_init = -zp_x * sum_k w.
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the shared helpers use its intrinsics.
#include "lowbit/kernels/qu8-gemm/qu8_ukernel_inl.h"
#include "lowbit/kernels/qsub-gemm/qsub_panel.h"
#include "lowbit/kernels/qu8-gemm/qu8_group_inl.h"
#include "lowbit/kernels/avxvnni_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

// Group-wise weight scales folded in per K block (kernels/qu8-gemm/qu8_group_inl.h).
LOWBIT_GROUP_EPILOGUE(qu8, avxvnni)

// 4- and 2-bit weight panels expanded per tile (kernels/qsub-gemm/qsub_panel.h).
LOWBIT_SUBBYTE_EXPANDERS(avxvnni)

using ::lowbit::Qu8GemmEpilogue;
using ::lowbit::Qu8GemmKernels;
using ::lowbit::Qu8Im2colRun;

template <int NR>
void qu8_pack_u8x4__avxvnni(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff,
                            const Qu8Im2colRun* runs, size_t nruns, size_t stride, size_t nr, uint8_t zp_x, void* b) {
  pack_u8x4<NR>(kg, x, avail, koff, runs, nruns, stride, nr, zp_x, b);
}

template <int MR, int NR>
void qu8_gemm_tile__avxvnni(size_t nc, size_t kg, const void* a_, const void* b_, uint8_t* c, size_t ldc,
                            const Qu8GemmEpilogue& e) {
  constexpr int NV = NR / 8;
  const int32_t* __restrict a = static_cast<const int32_t*>(a_);
  const __m256i* __restrict b = static_cast<const __m256i*>(b_);
  __m256i acc[MR][NV];
  #pragma GCC unroll 12
  for (int r = 0; r < MR; ++r)
    #pragma GCC unroll 2
    for (int v = 0; v < NV; ++v)
      acc[r][v] = e.first ? (e.row_init ? _mm256_set1_epi32(e.row_init[r]) : _mm256_setzero_si256())
                          : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.partial + r * NR + v * 8));
  for (size_t k = 0; k < kg; ++k) {
    __m256i bv[NV];
    #pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) bv[v] = _mm256_load_si256(b + v);
    #pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const __m256i av = _mm256_set1_epi32(a[r]);
      #pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[r][v] = dpbusd(acc[r][v], bv[v], av);
    }
    a += MR;
    b += NV;
  }
  if (!e.last) {
    #pragma GCC unroll 12
    for (int r = 0; r < MR; ++r)
      #pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) _mm256_storeu_si256(reinterpret_cast<__m256i*>(e.partial + r * NR + v * 8), acc[r][v]);
    return;
  }
  const YmmRequant q(e);
  #pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) requant_store_row<NR>(acc[r], nc, r, c + r * ldc, q);
}

}  // namespace

const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_avxvnni() {
  static const Qu8GemmKernels ks = [] {
    Qu8GemmKernels k;
    k.isa = "avxvnni";
    k.mr = 6;
    k.kg = 4;
    k.widened = false;
    k.nr = 16;
    k.nr_tail = 8;
    k.kc_max = 1024;
    k.main[1] = qu8_gemm_tile__avxvnni<1, 16>;
    k.main[2] = qu8_gemm_tile__avxvnni<2, 16>;
    k.main[3] = qu8_gemm_tile__avxvnni<3, 16>;
    k.main[4] = qu8_gemm_tile__avxvnni<4, 16>;
    k.main[5] = qu8_gemm_tile__avxvnni<5, 16>;
    k.main[6] = qu8_gemm_tile__avxvnni<6, 16>;
    k.tail[1] = qu8_gemm_tile__avxvnni<1, 8>;
    k.tail[2] = qu8_gemm_tile__avxvnni<2, 8>;
    k.tail[3] = qu8_gemm_tile__avxvnni<3, 8>;
    k.tail[4] = qu8_gemm_tile__avxvnni<4, 8>;
    k.tail[5] = qu8_gemm_tile__avxvnni<5, 8>;
    k.tail[6] = qu8_gemm_tile__avxvnni<6, 8>;
    k.pack = qu8_pack_u8x4__avxvnni<16>;
    k.pack_tail = qu8_pack_u8x4__avxvnni<8>;
    k.group_fma = qu8_group_fma__avxvnni;
    k.group_finish = qu8_group_finish__avxvnni;
    k.expand4 = qsub_expand_w4__avxvnni;
    k.expand2 = qsub_expand_w2__avxvnni;
    return k;
  }();
  return ks;
}

}  // namespace LOWBIT_KERNEL_NS
