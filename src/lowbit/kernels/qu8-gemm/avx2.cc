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
#include "lowbit/kernels/qu8-gemm/qu8_group_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

// Group-wise weight scales folded in per K block (kernels/qu8-gemm/qu8_group_inl.h).
LOWBIT_GROUP_EPILOGUE(qu8, avx2)

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
  const YmmRequant q(e);
  #pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) requant_store_row<NR>(acc[r], nc, r, c + r * ldc, q);
}

// Packs kg pairs of an nr-pixel panel as int16 (x - zp_x), pixel-major within a pair:
// b[(g * nr + j) * 2 + i] = x[koff[2g + i] + pixel j] - zp_x.
template <int NR>
void qu8_pack_i16__avx2(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff, const Qu8Im2colRun* runs,
                        size_t nruns, size_t stride, size_t nr, uint8_t zp_x, void* b_) {
  __m256i* b = static_cast<__m256i*>(b_);
  const __m256i zp = _mm256_set1_epi16(zp_x);
  const Qu8RowGather<NR> gather(runs, nruns, stride, zp_x);
  for (size_t g = 0; g < kg; ++g) {
    const __m128i r0 = gather.row(x, avail, koff[2 * g]), r1 = gather.row(x, avail, koff[2 * g + 1]);
    _mm256_store_si256(b++, _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(r0, r1)), zp));
    if constexpr (NR == 16) _mm256_store_si256(b++, _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(r0, r1)), zp));
  }
}

// Channels in lanes (Qu8GemmKernels::narrow) for a panel of NP <= 4 pixels packed 8 wide: acc[j]
// holds pixel j of the MR rows in lanes 0..MR-1 (the masked load zeroes the rest); per k pair one
// weight-vector load and, per pixel, one vpmaddwd with the pixel's two int16 activations broadcast.
// U accumulators per pixel over alternate k pairs hide the latency. e.partial holds NP x 8 words.
template <int MR, int NP>
[[gnu::always_inline]] inline void narrow_body(size_t kg, const int32_t* a, const int32_t* b, uint8_t* c, size_t ldc,
                                               const Qu8GemmEpilogue& e) {
  const __m256i rows = _mm256_cmpgt_epi32(_mm256_set1_epi32(MR), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  constexpr int U = (4 + NP - 1) / NP;
  // Every loop over acc is unrolled: one indexed at run time makes GCC keep acc in memory and
  // store each accumulator after every update.
  __m256i acc[NP][U];
  #pragma GCC unroll 4
  for (int j = 0; j < NP; ++j) {
    acc[j][0] = e.first ? (e.row_init ? _mm256_maskload_epi32(e.row_init, rows) : _mm256_setzero_si256())
                        : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.partial + j * 8));
    #pragma GCC unroll 4
    for (int u = 1; u < U; ++u) acc[j][u] = _mm256_setzero_si256();
  }
  size_t k = 0;
  for (; k + U <= kg; k += U)
    #pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      const __m256i av = _mm256_maskload_epi32(a + (k + u) * MR, rows);
      #pragma GCC unroll 4
      for (int j = 0; j < NP; ++j)
        acc[j][u] = _mm256_add_epi32(acc[j][u], _mm256_madd_epi16(av, _mm256_set1_epi32(b[(k + u) * 8 + j])));
    }
  for (; k < kg; ++k) {
    const __m256i av = _mm256_maskload_epi32(a + k * MR, rows);
    #pragma GCC unroll 4
    for (int j = 0; j < NP; ++j) acc[j][0] = _mm256_add_epi32(acc[j][0], _mm256_madd_epi16(av, _mm256_set1_epi32(b[k * 8 + j])));
  }
  __m256i sums[NP];
  #pragma GCC unroll 4
  for (int j = 0; j < NP; ++j) {
    sums[j] = acc[j][0];
    #pragma GCC unroll 4
    for (int u = 1; u < U; ++u) sums[j] = _mm256_add_epi32(sums[j], acc[j][u]);
  }
  for (int j = 0; j < NP; ++j) {
    const __m256i sum = sums[j];
    if (!e.last) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(e.partial + j * 8), sum);
      continue;
    }
    // The contract per row (requant_store_row), rows in lanes: scale and bias are vectors here.
    __m256 t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_maskload_ps(e.scale, rows),
                               _mm256_maskload_ps(e.bias, rows));
    if (e.res) {
      alignas(32) int32_t rv[8] = {};
      for (int r = 0; r < MR; ++r) rv[r] = e.res[r * e.ld_res + j];
      t = _mm256_fmadd_ps(
          _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(rv)),
                                              _mm256_set1_epi32(e.res_zp))),
          _mm256_set1_ps(e.res_scale), t);
    }
    t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(e.qmin)), _mm256_set1_ps(e.qmax));
    alignas(32) int32_t q[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(q), _mm256_add_epi32(_mm256_cvtps_epi32(t), _mm256_set1_epi32(e.zp_y)));
    for (int r = 0; r < MR; ++r) c[r * ldc + j] = static_cast<uint8_t>(q[r]);
  }
}

template <int MR>
void qu8_gemm_narrow__avx2(size_t nc, size_t kg, const void* a_, const void* b_, uint8_t* c, size_t ldc,
                           const Qu8GemmEpilogue& e) {
  const int32_t* a = static_cast<const int32_t*>(a_);
  const int32_t* b = static_cast<const int32_t*>(b_);
  switch (nc) {
    case 1: narrow_body<MR, 1>(kg, a, b, c, ldc, e); break;
    case 2: narrow_body<MR, 2>(kg, a, b, c, ldc, e); break;
    case 3: narrow_body<MR, 3>(kg, a, b, c, ldc, e); break;
    default: narrow_body<MR, 4>(kg, a, b, c, ldc, e); break;
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
    k.narrow_max = 4;
    k.narrow[1] = qu8_gemm_narrow__avx2<1>;
    k.narrow[2] = qu8_gemm_narrow__avx2<2>;
    k.narrow[3] = qu8_gemm_narrow__avx2<3>;
    k.narrow[4] = qu8_gemm_narrow__avx2<4>;
    k.narrow[5] = qu8_gemm_narrow__avx2<5>;
    k.narrow[6] = qu8_gemm_narrow__avx2<6>;
    k.pack = qu8_pack_i16__avx2<16>;
    k.pack_tail = qu8_pack_i16__avx2<8>;
    k.group_fma = qu8_group_fma__avx2;
    k.group_finish = qu8_group_finish__avx2;
    return k;
  }();
  return ks;
}

}  // namespace LOWBIT_KERNEL_NS
