// AVX-512F element-wise kernels: 16 floats per zmm, mask registers for the selects.
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as the unused merge source, which
// -Wmaybe-uninitialized reports wherever they are inlined (as in qu8-gemm/avx512vnni.cc).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the traits use its intrinsics.
#include "lowbit/kernels/f32-velementwise/velementwise_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

struct Avx512F {
  using Vec = __m512;
  using Mask = __mmask16;
  static constexpr size_t kLanes = 16;
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static Vec set1(float f) { return _mm512_set1_ps(f); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
  static Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static Vec div(Vec a, Vec b) { return _mm512_div_ps(a, b); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec max(Vec c, Vec v) { return _mm512_max_ps(c, v); }  // v when either is NaN
  static Vec min(Vec c, Vec v) { return _mm512_min_ps(c, v); }
  static Mask gt(Vec a, Vec b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static Mask ge(Vec a, Vec b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  static Mask ordered(Vec a) { return _mm512_cmp_ps_mask(a, a, _CMP_ORD_Q); }
  static Vec select(Mask m, Vec a, Vec b) { return _mm512_mask_blend_ps(m, b, a); }
  static Vec abs(Vec v) { return _mm512_abs_ps(v); }
  static Vec round(Vec v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // n + 1.5 * 2^23 holds n in its low mantissa bits (exact: n is an integer), so its bits + 127,
  // shifted into the exponent field, are 2^n; no float-to-int conversion (SIMDe has no 512-bit one).
  static Vec pow2(Vec n) {
    const __m512i b = _mm512_castps_si512(_mm512_add_ps(n, _mm512_set1_ps(12582912.0f)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(127)), 23));
  }
};

LOWBIT_VELEMENTWISE_KERNELS(avx512, Avx512F)

}  // namespace

const ::lowbit::F32VElementwiseKernels* f32_velementwise_avx512() {
  using F = ::lowbit::Feature;
  static constexpr ::lowbit::F32VElementwiseKernels k = make_avx512(
      (1u << static_cast<unsigned>(F::avx512f)));
  return &k;
}

}  // namespace LOWBIT_KERNEL_NS
