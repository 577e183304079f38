// AVX-512 VNNI depthwise qu8 (qu8_dwconv.h): raw u8 quads and vpdpbusd on zmm (u8 x s8 -> int32,
// exact): 16 outputs x 4 taps per instruction, a 3 x 3 stride-1 plane in 3 per vector of
// outputs. init = -zp_x * sum(w) restores sum (x - zp_x) w.
// GCC 12's AVX-512 headers initialise "undefined" vectors with themselves (GCC PR 105593), which
// -Wmaybe-uninitialized reports wherever they are inlined.
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the shared helpers use its intrinsics.
#include "lowbit/kernels/qu8-dwconv/qu8_dw_x86_inl.h"
#include "lowbit/kernels/qu8-gemm/qu8_zmm_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

struct Avx512VnniDw {
  using Wv = __m512i;
  using Acc = __m512i;
  struct Requant : ZmmRequant {
    explicit Requant(const ::lowbit::Qu8GemmEpilogue& e) : ZmmRequant(e) {}
  };
  static Wv bcast(int32_t w) { return _mm512_set1_epi32(w); }
  static Acc init(int32_t i) { return _mm512_set1_epi32(i); }
  static void dot(Acc& acc, const int32_t* p, Wv w) { acc = _mm512_dpbusd_epi32(acc, _mm512_loadu_si512(p), w); }
  static void make_words(const uint8_t* v, size_t n, uint8_t, int32_t* words) { qu8_dw_words_quads_avx2(v, n, 0, words); }
  static void make_words_stride2(const uint8_t* v, size_t n, uint8_t, int32_t* words) {
    qu8_dw_words_quads_s2_avx2(v, n, 0, words);
  }
  static void store(const Acc& acc, Requant& rq, const uint8_t* res, uint8_t* out) {
    rq.res = res;
    requant_store_row_zmm(acc, 16, 0, out, rq);
  }
};

}  // namespace

void qu8_dwconv2d_flat__avx512vnni(const uint8_t* x, const ::lowbit::Qu8DwPlan& p, const int32_t* w, int32_t init,
                                   uint8_t* y, const ::lowbit::Qu8GemmEpilogue& e, void* scratch) {
  qu8_dw_plane<Avx512VnniDw>(x, p, w, init, y, e, scratch);
}

const ::lowbit::Qu8DwKernel& qu8_dwconv_avx512vnni() {
  static const ::lowbit::Qu8DwKernel k{"avx512vnni", 4, false, 0, qu8_dwconv2d_flat__avx512vnni};
  return k;
}

}  // namespace LOWBIT_KERNEL_NS
