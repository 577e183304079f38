// AVX2 depthwise qu8 (qu8_dwconv.h): int16 pairs (x - zp_x) and vpmaddwd, which forms
// w0 * x0 + w1 * x1 in int32 exactly (|255 * 128| * 2 < 2^31), as the AVX2 GEMM kernels do.
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the shared helpers use its intrinsics.
#include "lowbit/kernels/qu8-dwconv/qu8_dw_x86_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

struct Avx2Dw : YmmDwBase {
  static void dot(Acc& acc, const int32_t* p, Wv w) {
    acc.v[0] = _mm256_add_epi32(acc.v[0], _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), w));
    acc.v[1] = _mm256_add_epi32(acc.v[1], _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 8)), w));
  }
  static void make_words(const uint8_t* v, size_t n, uint8_t zp, int32_t* words) { qu8_dw_words_pairs_avx2(v, n, zp, words); }
  static void make_words_stride2(const uint8_t* v, size_t n, uint8_t zp, int32_t* words) {
    qu8_dw_words_pairs_s2_avx2(v, n, zp, words);
  }
};

}  // namespace

void qu8_dwconv2d_flat__avx2(const uint8_t* x, const ::lowbit::Qu8DwPlan& p, const int32_t* w, int32_t init, uint8_t* y,
                             const ::lowbit::Qu8GemmEpilogue& e, void* scratch) {
  qu8_dw_plane<Avx2Dw>(x, p, w, init, y, e, scratch);
}

const ::lowbit::Qu8DwKernel& qu8_dwconv_avx2() {
  static const ::lowbit::Qu8DwKernel k{"avx2", 2, true, 0, qu8_dwconv2d_flat__avx2};
  return k;
}

}  // namespace LOWBIT_KERNEL_NS
