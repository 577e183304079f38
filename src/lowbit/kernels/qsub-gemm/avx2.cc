// AVX2 sub-byte GEMM: vpmaddubsw into int16 accumulators, widened every G k groups (qsub_gemm.h).
// The 6 x 16 tile holds 12 int16 accumulators, 2 B vectors and 1 broadcast weight word in
// registers; the int32 sums live in memory between spans (touched once per G groups).
#include <utility>

#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the shared helpers use its intrinsics.
#include "lowbit/kernels/qsub-gemm/qsub_gemm.h"
#include "lowbit/kernels/qu8-gemm/qu8_ukernel_inl.h"
#include "lowbit/kernels/qsub-gemm/qsub_panel.h"
#include "lowbit/kernels/qu8-gemm/qu8_group_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

// Group-wise weight scales folded in per K block (kernels/qu8-gemm/qu8_group_inl.h).
LOWBIT_GROUP_EPILOGUE(qsub, avx2)

// 4- and 2-bit weight panels expanded per tile (kernels/qsub-gemm/qsub_panel.h).
LOWBIT_SUBBYTE_EXPANDERS(avx2)

using ::lowbit::Qu8GemmEpilogue;
using ::lowbit::Qu8GemmKernels;
using ::lowbit::Qu8Im2colRun;

template <int NR>
void qsub_pack_u8x4__avx2(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff, const Qu8Im2colRun* runs,
                          size_t nruns, size_t stride, size_t nr, uint8_t zp_x, void* b) {
  pack_u8x4<NR>(kg, x, avail, koff, runs, nruns, stride, nr, zp_x, b);
}

template <int MR, int NR, int G>
void qsub_gemm_tile__avx2(size_t nc, size_t kg, const void* a_, const void* b_, uint8_t* c, size_t ldc,
                          const Qu8GemmEpilogue& e) {
  constexpr int NV = NR / 8;
  const int32_t* __restrict a = static_cast<const int32_t*>(a_);
  const __m256i* __restrict b = static_cast<const __m256i*>(b_);
  alignas(32) int32_t acc32[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j)
      acc32[r][j] = e.first ? (e.row_init ? e.row_init[r] : 0) : e.partial[r * NR + j];
  const __m256i ones = _mm256_set1_epi16(1);
  for (size_t k0 = 0; k0 < kg; k0 += G) {
    const size_t kn = kg - k0 < size_t(G) ? kg - k0 : size_t(G);
    __m256i acc[MR][NV];
    #pragma GCC unroll 12
    for (int r = 0; r < MR; ++r)
      #pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_si256();
    for (size_t k = 0; k < kn; ++k) {
      __m256i bv[NV];
      #pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) bv[v] = _mm256_load_si256(b + v);
      #pragma GCC unroll 12
      for (int r = 0; r < MR; ++r) {
        const __m256i av = _mm256_set1_epi32(a[r]);
        #pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) {
          acc[r][v] = _mm256_add_epi16(acc[r][v], _mm256_maddubs_epi16(bv[v], av));
          // Row by row in registers: without this GCC issued all 12 vpmaddubsw into temporaries
          // first (6 broadcasts + 12 products live) and kept the accumulators on the stack,
          // 14 loads and stores a k group (w4a4 ResNet-50: 61.7 ms, slower than int8's 55.6).
          __asm__("" : "+x"(acc[r][v]));
        }
      }
      a += MR;
      b += NV;
    }
    // Widen: each int32 lane = its two int16 halves (the pair sums of k 0-1 and 2-3).
    #pragma GCC unroll 12
    for (int r = 0; r < MR; ++r)
      #pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) {
        __m256i* p = reinterpret_cast<__m256i*>(&acc32[r][v * 8]);
        _mm256_store_si256(p, _mm256_add_epi32(_mm256_load_si256(p), _mm256_madd_epi16(acc[r][v], ones)));
      }
  }
  if (!e.last) {
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) e.partial[r * NR + j] = acc32[r][j];
    return;
  }
  const YmmRequant q(e);
  #pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
    __m256i row[NV];
    #pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) row[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(&acc32[r][v * 8]));
    requant_store_row<NR>(row, nc, r, c + r * ldc, q);
  }
}

// t[MR] = the MR x NR tile for MR = 1..6 (index 0 stays empty).
template <int NR, int G, int... MR>
void fill_tiles(::lowbit::Qu8GemmUkernel* t, std::integer_sequence<int, MR...>) {
  ((t[MR] = MR ? qsub_gemm_tile__avx2<(MR ? MR : 1), NR, G> : nullptr), ...);
}

template <int G>
Qu8GemmKernels make_kernels() {
  Qu8GemmKernels k;
  k.isa = "avx2";
  k.mr = 6;
  k.kg = 4;
  k.widened = false;
  k.nr = 16;
  k.nr_tail = 8;
  k.kc_max = 1024;
  fill_tiles<16, G>(k.main, std::make_integer_sequence<int, 7>{});
  fill_tiles<8, G>(k.tail, std::make_integer_sequence<int, 7>{});
  k.pack = qsub_pack_u8x4__avx2<16>;
  k.pack_tail = qsub_pack_u8x4__avx2<8>;
  k.group_fma = qsub_group_fma__avx2;
  k.group_finish = qsub_group_finish__avx2;
  k.expand4 = qsub_expand_w4__avx2;
  k.expand2 = qsub_expand_w2__avx2;
  return k;
}

}  // namespace

const ::lowbit::Qu8GemmKernels* qsub_gemm_kernels_avx2(int groups) {
  static const Qu8GemmKernels k8 = make_kernels<8>(), k32 = make_kernels<32>(), k128 = make_kernels<128>();
  if (groups >= 128) return &k128;
  if (groups >= 32) return &k32;
  if (groups >= 8) return &k8;
  return nullptr;
}

}  // namespace LOWBIT_KERNEL_NS
