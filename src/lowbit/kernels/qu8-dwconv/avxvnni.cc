// AVX-VNNI depthwise qu8 (qu8_dwconv.h): raw u8 quads and VEX vpdpbusd on ymm (u8 x s8 -> int32,
// exact); init = -zp_x * sum(w) restores sum (x - zp_x) w. 4 taps per instruction where AVX2's
// vpmaddwd takes 2.
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the shared helpers use its intrinsics.
#include "lowbit/kernels/qu8-dwconv/qu8_dw_x86_inl.h"
#include "lowbit/kernels/avxvnni_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

struct AvxVnniDw : YmmDwBase {
  static void dot(Acc& acc, const int32_t* p, Wv w) {
    acc.v[0] = dpbusd(acc.v[0], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), w);
    acc.v[1] = dpbusd(acc.v[1], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 8)), w);
  }
  static void make_words(const uint8_t* v, size_t n, uint8_t, int32_t* words) { qu8_dw_words_quads_avx2(v, n, 0, words); }
  static void make_words_stride2(const uint8_t* v, size_t n, uint8_t, int32_t* words) {
    qu8_dw_words_quads_s2_avx2(v, n, 0, words);
  }
};

}  // namespace

void qu8_dwconv2d_flat__avxvnni(const uint8_t* x, const ::lowbit::Qu8DwPlan& p, const int32_t* w, int32_t init,
                                uint8_t* y, const ::lowbit::Qu8GemmEpilogue& e, void* scratch) {
  qu8_dw_plane<AvxVnniDw>(x, p, w, init, y, e, scratch);
}

const ::lowbit::Qu8DwKernel& qu8_dwconv_avxvnni() {
  static const ::lowbit::Qu8DwKernel k{"avxvnni", 4, false, 0, qu8_dwconv2d_flat__avxvnni};
  return k;
}

}  // namespace LOWBIT_KERNEL_NS
