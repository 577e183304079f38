#pragma once
// Max and average pooling of one plane, written once over an fp32 vector traits type V
// (kernels/simd/f32_vec_*.h; included by the ISA files only). Contract: f32_pool.h.
#include <cstddef>
#include <initializer_list>

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

template <class V, bool kMax>
inline typename V::Vec combine(typename V::Vec v, typename V::Vec acc) {
  // max(v, acc) keeps acc when v is NaN, like the reference's `v > best`; acc starts as a value
  // that is not NaN, so it never becomes one.
  if constexpr (kMax) return V::select(V::gt(v, acc), v, acc);  // NEON fmax would return the NaN
  else return V::add(acc, v);
}

// The column reduction of `rows` input rows (first at r, dh floats apart) into out[0, W).
template <class V, bool kMax>
inline void reduce_rows(const float* r, size_t rows, size_t dh, size_t W, float fill, float* out) {
  constexpr size_t L = V::kLanes;
  size_t j = 0;
  for (; j + L <= W; j += L) {
    typename V::Vec acc = V::set1(fill);
    for (size_t k = 0; k < rows; ++k) acc = combine<V, kMax>(V::load(r + k * dh + j), acc);
    V::store(out + j, acc);
  }
  if (j < W) {  // the row's tail: no read past the plane's last row
    typename V::Vec acc = V::set1(fill);
    for (size_t k = 0; k < rows; ++k) acc = combine<V, kMax>(V::load_n(r + k * dh + j, W - j), acc);
    V::store_n(out + j, acc, W - j);
  }
}

template <class V, int S, bool kMax>
void pool_plane(const float* x, const ::lowbit::F32PoolGeometry& g, const float* inv_h, const float* inv_w,
                float* row, float* y) {
  constexpr size_t L = V::kLanes;
  const size_t SW = S ? static_cast<size_t>(S) : g.SW;
  const float fill = kMax ? -__builtin_inff() : 0.0f;
  // Two row buffers, the identity in their left pads and everything right of the image, once per
  // plane: the column passes write only [pad_left, pad_left + W). Row oh + 1's column pass runs
  // before row oh's row pass, so the row pass's unaligned loads (taps 1 and 2 of 3x3) do not wait
  // on the stores just made (a load spanning two queued stores cannot be forwarded).
  const size_t n_row = ::lowbit::f32_pool_row_floats(g);
  const typename V::Vec vfill = V::set1(fill);
  const auto fill_span = [&](float* b, size_t n) {
    size_t i = 0;
    for (; i + L <= n; i += L) V::store(b + i, vfill);
    if (i < n) V::store_n(b + i, vfill, n - i);
  };
  for (float* b : {row, row + n_row}) {
    fill_span(b, g.pad_left);
    fill_span(b + g.pad_left + g.W, n_row - g.pad_left - g.W);
  }
  const ptrdiff_t dh = static_cast<ptrdiff_t>(g.DH), H = static_cast<ptrdiff_t>(g.H);
  const auto column_pass = [&](size_t oh) {
    // Window rows ih = top + kh * DH inside [0, H): kh in [k0, k1).
    const ptrdiff_t top = static_cast<ptrdiff_t>(oh * g.SH) - static_cast<ptrdiff_t>(g.pad_top);
    ptrdiff_t k0 = top < 0 ? (-top + dh - 1) / dh : 0;
    ptrdiff_t k1 = top < H ? (H - 1 - top) / dh + 1 : 0;
    if (k1 > static_cast<ptrdiff_t>(g.KH)) k1 = static_cast<ptrdiff_t>(g.KH);
    if (k0 > k1) k0 = k1;
    const float* r = k1 > k0 ? x + (top + k0 * dh) * static_cast<ptrdiff_t>(g.W) : x;
    reduce_rows<V, kMax>(r, static_cast<size_t>(k1 - k0), g.DH * g.W, g.W, fill, row + (oh & 1) * n_row + g.pad_left);
  };
  column_pass(0);
  for (size_t oh = 0; oh < g.OH; ++oh) {
    if (oh + 1 < g.OH) column_pass(oh + 1);
    const float* cur = row + (oh & 1) * n_row;
    for (size_t ow = 0; ow < g.OW; ow += L) {
      const float* base = cur + ow * SW;
      typename V::Vec acc;
      if (S == 2 && g.DW == 1) {  // taps kw and kw + 1 are the even and odd lanes of one deinterleave
        typename V::Vec e, o;
        V::deinterleave(base, e, o);
        acc = g.KW > 1 ? combine<V, kMax>(o, e) : e;
        for (size_t kw = 2; kw < g.KW; kw += 2) {
          V::deinterleave(base + kw, e, o);
          acc = combine<V, kMax>(e, acc);
          if (kw + 1 < g.KW) acc = combine<V, kMax>(o, acc);
        }
      } else {
        acc = load_strided<V, S>(base, SW);
        for (size_t kw = 1; kw < g.KW; ++kw) acc = combine<V, kMax>(load_strided<V, S>(base + kw * g.DW, SW), acc);
      }
      if constexpr (!kMax) acc = V::mul(V::mul(acc, V::set1(inv_h[oh])), V::load(inv_w + ow));
      const size_t n = g.OW - ow;
      if (n >= L) V::store(y + oh * g.OW + ow, acc);
      else V::store_n(y + oh * g.OW + ow, acc, n);
    }
  }
}

template <class V, bool kMax>
void pool_dispatch(const float* x, const ::lowbit::F32PoolGeometry& g, const float* inv_h, const float* inv_w,
                   float* row, float* y) {
  if (g.SW == 1) pool_plane<V, 1, kMax>(x, g, inv_h, inv_w, row, y);
  else if (g.SW == 2) pool_plane<V, 2, kMax>(x, g, inv_h, inv_w, row, y);
  else pool_plane<V, 0, kMax>(x, g, inv_h, inv_w, row, y);
}

}  // namespace
}  // namespace LOWBIT_KERNEL_NS::pool

// Each ISA file's two functions and its set from its traits type V.
#define LOWBIT_F32_POOL_KERNELS(ISA, V)                                                                          \
  void f32_maxpool2d_chw__##ISA(const float* x, const ::lowbit::F32PoolGeometry& g, float* row, float* y) {      \
    ::LOWBIT_KERNEL_NS::pool::pool_dispatch<V, true>(x, g, nullptr, nullptr, row, y);                            \
  }                                                                                                              \
  void f32_avgpool2d_chw__##ISA(const float* x, const ::lowbit::F32PoolGeometry& g, const float* inv_h,          \
                                const float* inv_w, float* row, float* y) {                                      \
    ::LOWBIT_KERNEL_NS::pool::pool_dispatch<V, false>(x, g, inv_h, inv_w, row, y);                               \
  }                                                                                                              \
  const ::lowbit::F32PoolKernels* f32_pool_##ISA() {                                                             \
    static constexpr ::lowbit::F32PoolKernels k = {#ISA, V::kLanes, &f32_maxpool2d_chw__##ISA,                   \
                                                    &f32_avgpool2d_chw__##ISA};                                  \
    return &k;                                                                                                   \
  }
