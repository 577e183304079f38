#pragma once
// Max and average pooling of one padded plane, written once over an fp32 vector traits type V
// (kernels/simd/f32_vec_*.h; included by the ISA files only). Contract: f32_pool.h.
#include <cstddef>

#include "lowbit/kernels/f32-pool/f32_pool.h"

namespace LOWBIT_KERNEL_NS::pool {
namespace {

// kLanes floats src[0], src[s], ... (S: the stride when known at compile time, else 0).
template <class V, int S>
inline typename V::Vec load_strided(const float* src, size_t s) {
  if constexpr (S == 1) {
    return V::load(src);
  } else if constexpr (S == 2) {
    typename V::Vec e, o;
    V::deinterleave(src, e, o);
    return e;
  } else {
    float b[V::kLanes];
    for (size_t i = 0; i < V::kLanes; ++i) b[i] = src[i * s];
    return V::load(b);
  }
}

template <class V, int S, bool kMax>
void pool_plane(const float* x, size_t ld_x, const ::lowbit::F32PoolGeometry& g, const float* inv_h,
                const float* inv_w, float* y) {
  constexpr size_t L = V::kLanes;
  const size_t SW = S ? static_cast<size_t>(S) : g.SW;
  for (size_t oh = 0; oh < g.OH; ++oh) {
    const float* base = x + oh * g.SH * ld_x;
    for (size_t ow = 0; ow < g.OW; ow += L) {
      typename V::Vec acc = V::set1(kMax ? -__builtin_inff() : 0.0f);
      for (size_t kh = 0; kh < g.KH; ++kh) {
        const float* row = base + kh * g.DH * ld_x + ow * SW;
        for (size_t kw = 0; kw < g.KW; ++kw) {
          const typename V::Vec v = load_strided<V, S>(row + kw * g.DW, SW);
          // max(v, acc) keeps acc when v is NaN, like the reference's `v > best`.
          acc = kMax ? V::max(v, acc) : V::add(acc, v);
        }
      }
      if constexpr (!kMax) acc = V::mul(V::mul(acc, V::set1(inv_h[oh])), V::load(inv_w + ow));
      const size_t n = g.OW - ow;
      if (n >= L) V::store(y + oh * g.OW + ow, acc);
      else V::store_n(y + oh * g.OW + ow, acc, n);
    }
  }
}

template <class V, bool kMax>
void pool_dispatch(const float* x, size_t ld_x, const ::lowbit::F32PoolGeometry& g, const float* inv_h,
                   const float* inv_w, float* y) {
  if (g.SW == 1) pool_plane<V, 1, kMax>(x, ld_x, g, inv_h, inv_w, y);
  else if (g.SW == 2) pool_plane<V, 2, kMax>(x, ld_x, g, inv_h, inv_w, y);
  else pool_plane<V, 0, kMax>(x, ld_x, g, inv_h, inv_w, y);
}

}  // namespace
}  // namespace LOWBIT_KERNEL_NS::pool

// Each ISA file's two functions and its set from its traits type V.
#define LOWBIT_F32_POOL_KERNELS(ISA, V)                                                                          \
  void f32_maxpool2d_chw__##ISA(const float* x, size_t ld_x, const ::lowbit::F32PoolGeometry& g, float* y) {     \
    ::LOWBIT_KERNEL_NS::pool::pool_dispatch<V, true>(x, ld_x, g, nullptr, nullptr, y);                           \
  }                                                                                                              \
  void f32_avgpool2d_chw__##ISA(const float* x, size_t ld_x, const ::lowbit::F32PoolGeometry& g,                 \
                                const float* inv_h, const float* inv_w, float* y) {                              \
    ::LOWBIT_KERNEL_NS::pool::pool_dispatch<V, false>(x, ld_x, g, inv_h, inv_w, y);                              \
  }                                                                                                              \
  const ::lowbit::F32PoolKernels* f32_pool_##ISA() {                                                             \
    static constexpr ::lowbit::F32PoolKernels k = {#ISA, V::kLanes, &f32_maxpool2d_chw__##ISA,                   \
                                                    &f32_avgpool2d_chw__##ISA};                                  \
    return &k;                                                                                                   \
  }
