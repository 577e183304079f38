// AVX2 qu8 GEMM: exact u8 x s8 through int16 widening and vpmaddwd (README.md).
//
// Activations are widened to int16 with zp_x already subtracted while packing a panel (x - zp_x
// is in [-255, 255]), weights were widened once at creation; vpmaddwd forms
// a0*b0 + a1*b1 in int32 (|.| <= 2 * 255 * 128, never saturates) and vpaddd accumulates. No
// vpmaddubsw: its int16 saturation corrupts 255 x -128 pairs.
//
// Tile MR x 16: 2*MR ymm accumulators; per k pair two B loads, MR broadcasts, 2*MR vpmaddwd on
// the two multiply pipes and 2*MR vpaddd on the others.
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the shared helpers use its intrinsics.
#include "lowbit/kernels/qu8-gemm/qu8_ukernel_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

using ::lowbit::Qu8GemmEpilogue;
using ::lowbit::Qu8GemmKernels;
using ::lowbit::Qu8Im2colRun;

template <int MR, int NR>
void qu8_gemm_tile__avx2(size_t nc, size_t kg, const void* a_, const void* b_, uint8_t* c, size_t ldc,
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

  #pragma GCC unroll 2
  for (size_t k = 0; k < kg; ++k) {
    __m256i bv[NV];
    #pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) bv[v] = _mm256_load_si256(b + v);
    #pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const __m256i av = _mm256_set1_epi32(a[r]);
      #pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(av, bv[v]));
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
  #pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) requant_store_row<NR>(acc[r], nc, r, c + r * ldc, e);
}

// Packs kg pairs of an nr-pixel panel as int16 (x - zp_x), pixel-major within a pair:
// b[(g * nr + j) * 2 + i] = x[koff[2g + i] + pixel j] - zp_x.
template <int NR>
void qu8_pack_i16__avx2(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff, const Qu8Im2colRun* runs,
                        size_t nruns, size_t stride, size_t nr, uint8_t zp_x, void* b_) {
  __m256i* b = static_cast<__m256i*>(b_);
  const __m256i zp = _mm256_set1_epi16(zp_x);
  const bool direct = nruns == 1 && runs[0].len == NR && stride == 1;  // one contiguous run: load in place
  alignas(16) uint8_t t0[NR + 32], t1[NR + 32];
  for (size_t g = 0; g < kg; ++g) {
    __m128i r0, r1;
    if (direct) {
      const uint8_t* s0 = x + koff[2 * g] + runs[0].src;
      const uint8_t* s1 = x + koff[2 * g + 1] + runs[0].src;
      if constexpr (NR == 16) {
        r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s0));
        r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s1));
      } else {
        r0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s0));
        r1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s1));
      }
    } else {
      qu8_gather_row(x, avail, koff[2 * g], runs, nruns, stride, NR, zp_x, t0);
      qu8_gather_row(x, avail, koff[2 * g + 1], runs, nruns, stride, NR, zp_x, t1);
      r0 = _mm_load_si128(reinterpret_cast<const __m128i*>(t0));
      r1 = _mm_load_si128(reinterpret_cast<const __m128i*>(t1));
    }
    _mm256_store_si256(b++, _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(r0, r1)), zp));
    if constexpr (NR == 16) _mm256_store_si256(b++, _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(r0, r1)), zp));
  }
}

}  // namespace

const ::lowbit::Qu8GemmKernels& qu8_gemm_kernels_avx2() {
  static const Qu8GemmKernels ks = [] {
    Qu8GemmKernels k;
    k.isa = "avx2";
    k.mr = 6;
    k.kg = 2;
    k.widened = true;
    k.nr = 16;
    k.nr_tail = 8;
    k.kc_max = 512;
    k.main[1] = qu8_gemm_tile__avx2<1, 16>;
    k.main[2] = qu8_gemm_tile__avx2<2, 16>;
    k.main[3] = qu8_gemm_tile__avx2<3, 16>;
    k.main[4] = qu8_gemm_tile__avx2<4, 16>;
    k.main[5] = qu8_gemm_tile__avx2<5, 16>;
    k.main[6] = qu8_gemm_tile__avx2<6, 16>;
    k.tail[1] = qu8_gemm_tile__avx2<1, 8>;
    k.tail[2] = qu8_gemm_tile__avx2<2, 8>;
    k.tail[3] = qu8_gemm_tile__avx2<3, 8>;
    k.tail[4] = qu8_gemm_tile__avx2<4, 8>;
    k.tail[5] = qu8_gemm_tile__avx2<5, 8>;
    k.tail[6] = qu8_gemm_tile__avx2<6, 8>;
    k.pack = qu8_pack_i16__avx2<16>;
    k.pack_tail = qu8_pack_i16__avx2<8>;
    return k;
  }();
  return ks;
}

}  // namespace LOWBIT_KERNEL_NS
