// AVX2 pooling: 8 output pixels of a row per vector over a padded plane (f32_pool_inl.h), and the
// global average pool.
#include "lowbit/kernels/simd/f32_vec_avx2.h"
// the traits first: the template uses them
#include "lowbit/kernels/f32-pool/f32_pool_inl.h"

namespace lowbit {
namespace {

inline __m256i lane_mask(size_t n) {
  alignas(32) static const int32_t table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(table + 8 - n));
}

}  // namespace

LOWBIT_F32_POOL_KERNELS(avx2, simd::Avx2F)

void f32_global_avgpool__avx2(const float* x, size_t n, size_t channels, float* y) {
  const float scale = 1.0f / static_cast<float>(n);
  for (size_t c = 0; c < channels; ++c, x += n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
      a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
      a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
    }
    if (i + 8 <= n) {
      a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
      i += 8;
    }
    if (i < n) a1 = _mm256_add_ps(a1, _mm256_maskload_ps(x + i, lane_mask(n - i)));
    const __m256 s = _mm256_add_ps(a0, a1);
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    y[c] = _mm_cvtss_f32(q) * scale;
  }
}

}  // namespace lowbit
