// AVX2 + FMA element-wise kernels: 8 floats per ymm (the algorithms: velementwise_inl.h).
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the traits use its intrinsics.
#include "lowbit/kernels/f32-velementwise/velementwise_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

struct Avx2F {
  using Vec = __m256;
  using Mask = __m256;
  static constexpr size_t kLanes = 8;
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static Vec set1(float f) { return _mm256_set1_ps(f); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static Vec div(Vec a, Vec b) { return _mm256_div_ps(a, b); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec max(Vec c, Vec v) { return _mm256_max_ps(c, v); }  // v when either is NaN
  static Vec min(Vec c, Vec v) { return _mm256_min_ps(c, v); }
  static Mask gt(Vec a, Vec b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static Mask ge(Vec a, Vec b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  static Mask ordered(Vec a) { return _mm256_cmp_ps(a, a, _CMP_ORD_Q); }
  static Vec select(Mask m, Vec a, Vec b) { return _mm256_blendv_ps(b, a, m); }
  static Vec abs(Vec v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
  static Vec round(Vec v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static Vec pow2(Vec n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
};

LOWBIT_VELEMENTWISE_KERNELS(avx2, Avx2F)

}  // namespace

const ::lowbit::F32VElementwiseKernels* f32_velementwise_avx2() {
  using F = ::lowbit::Feature;
  static constexpr ::lowbit::F32VElementwiseKernels k = make_avx2(
      (1u << static_cast<unsigned>(F::avx2)) | (1u << static_cast<unsigned>(F::fma)));
  return &k;
}

}  // namespace LOWBIT_KERNEL_NS
