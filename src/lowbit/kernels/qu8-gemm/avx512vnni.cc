// AVX-512 VNNI qu8 GEMM: vpdpbusd multiplies u8 activations by s8 weights and adds groups of four
// products into int32 lanes without saturation, so it is exact for the full u8 x s8 range. The
// zero point of x is handled by starting the accumulators at -zp_x * sum_k w (row_init).
//
// Tile MR x 16: one zmm accumulator per channel row (16 pixels x 4 k per B vector); per k group
// one B load and MR broadcast weight words, which the compiler folds into vpdpbusd's {1to16}
// memory operand. MR x 8 tails use the ymm form (AVX512VL).
// GCC 12's AVX-512 headers initialise "undefined" vectors with themselves (GCC PR 105593), which
// -Wmaybe-uninitialized reports wherever they are inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the shared helpers use its intrinsics.
#include "lowbit/kernels/qu8-gemm/qu8_ukernel_inl.h"

#include <utility>

namespace LOWBIT_KERNEL_NS {
namespace {

using ::lowbit::Qu8GemmEpilogue;
using ::lowbit::Qu8GemmKernels;
using ::lowbit::Qu8Im2colRun;

template <int NR>
void qu8_pack_u8x4__avx512vnni(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff,
                               const Qu8Im2colRun* runs, size_t nruns, size_t stride, size_t nr, uint8_t zp_x,
                               void* b) {
  pack_u8x4<NR>(kg, x, avail, koff, runs, nruns, stride, nr, zp_x, b);
}

template <int MR>
void qu8_gemm_tile16__avx512vnni(size_t nc, size_t kg, const void* a_, const void* b_, uint8_t* c, size_t ldc,
                                 const Qu8GemmEpilogue& e) {
  const int32_t* __restrict a = static_cast<const int32_t*>(a_);
  const __m512i* __restrict b = static_cast<const __m512i*>(b_);
  __m512i acc[MR];
  #pragma GCC unroll 12
  for (int r = 0; r < MR; ++r)
    acc[r] = e.first ? (e.row_init ? _mm512_set1_epi32(e.row_init[r]) : _mm512_setzero_si512())
                     : _mm512_loadu_si512(e.partial + r * 16);
  for (size_t k = 0; k < kg; ++k) {
    const __m512i bv = _mm512_load_si512(b);
    #pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) acc[r] = _mm512_dpbusd_epi32(acc[r], bv, _mm512_set1_epi32(a[r]));
    a += MR;
    b += 1;
  }
  if (!e.last) {
    #pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) _mm512_storeu_si512(e.partial + r * 16, acc[r]);
    return;
  }
  #pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
    const __m256i halves[2] = {_mm512_castsi512_si256(acc[r]), _mm512_extracti64x4_epi64(acc[r], 1)};
    requant_store_row<16>(halves, nc, r, c + r * ldc, e);
  }
}

template <int MR>
void qu8_gemm_tile8__avx512vnni(size_t nc, size_t kg, const void* a_, const void* b_, uint8_t* c, size_t ldc,
                                const Qu8GemmEpilogue& e) {
  const int32_t* __restrict a = static_cast<const int32_t*>(a_);
  const __m256i* __restrict b = static_cast<const __m256i*>(b_);
  __m256i acc[MR][1];
  #pragma GCC unroll 12
  for (int r = 0; r < MR; ++r)
    acc[r][0] = e.first ? (e.row_init ? _mm256_set1_epi32(e.row_init[r]) : _mm256_setzero_si256())
                        : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.partial + r * 8));
  for (size_t k = 0; k < kg; ++k) {
    const __m256i bv = _mm256_load_si256(b);
    #pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) acc[r][0] = _mm256_dpbusd_epi32(acc[r][0], bv, _mm256_set1_epi32(a[r]));
    a += MR;
    b += 1;
  }
  if (!e.last) {
    #pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) _mm256_storeu_si256(reinterpret_cast<__m256i*>(e.partial + r * 8), acc[r][0]);
    return;
  }
  #pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) requant_store_row<8>(acc[r], nc, r, c + r * ldc, e);
}

template <int... MRs>
void fill(Qu8GemmKernels& k, std::integer_sequence<int, MRs...>) {
  ((k.main[MRs + 1] = qu8_gemm_tile16__avx512vnni<MRs + 1>, k.tail[MRs + 1] = qu8_gemm_tile8__avx512vnni<MRs + 1>),
   ...);
}

}  // namespace

const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_avx512vnni() {
  static const Qu8GemmKernels ks = [] {
    Qu8GemmKernels k;
    k.isa = "avx512vnni";
    k.mr = 12;
    k.kg = 4;
    k.widened = false;
    k.nr = 16;
    k.nr_tail = 8;
    k.kc_max = 1024;
    fill(k, std::make_integer_sequence<int, 12>{});
    k.pack = qu8_pack_u8x4__avx512vnni<16>;
    k.pack_tail = qu8_pack_u8x4__avx512vnni<8>;
    return k;
  }();
  return ks;
}

}  // namespace LOWBIT_KERNEL_NS
