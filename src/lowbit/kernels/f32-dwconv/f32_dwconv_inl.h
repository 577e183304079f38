#pragma once
// The flat polyphase depthwise kernels, written once over an fp32 vector traits type V
// (kernels/simd/f32_vec_*.h; included by the ISA files only). See f32_dwconv.h for the contract
// and README.md for the layout.
#include <cstddef>
#include <cstdint>

#include "lowbit/kernels/f32-dwconv/f32_dwconv.h"

namespace LOWBIT_KERNEL_NS::dwconv {
namespace {

// The first k floats (k <= L; all of a vector at k = L, where load_n's contract ends).
template <class V>
inline typename V::Vec load_k(const float* p, size_t k) {
  return k >= V::kLanes ? V::load(p) : V::load_n(p, k);
}

template <class V>
inline void store_k(float* p, typename V::Vec v, size_t k) {
  if (k >= V::kLanes) V::store(p, v);
  else if (k > 0) V::store_n(p, v, k);
}

// NV vectors of flat outputs from q: one tap at a time over all NV (NV independent FMA chains,
// one load each), the taps in order, so every output sums its taps in the same order whatever NV.
template <class V, int NV>
inline void flat_block(const float* src, const int32_t* off, const float* w, size_t taps, float bias, size_t q,
                       float* out) {
  constexpr size_t L = V::kLanes;
  typename V::Vec acc[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) acc[v] = V::set1(bias);
  for (size_t t = 0; t < taps; ++t) {
    const typename V::Vec wv = V::set1(w[t]);
    const float* s = src + off[t] + q;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[v] = V::fma(wv, V::load(s + static_cast<size_t>(v) * L), acc[v]);
  }
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) V::store(out + q + static_cast<size_t>(v) * L, acc[v]);
}

// out[q] = bias + sum_t w[t] * src[off[t] + q] for q < n rounded up to whole vectors.
template <class V>
void flat(const float* src, const int32_t* off, const float* w, size_t taps, float bias, size_t n, float* out) {
  constexpr size_t L = V::kLanes;
  size_t q = 0;
  // 8 chains cover two FMA pipes of 4-cycle latency. The rest is one block of as many chains as
  // vectors are left: as 4 + 1 + 1 + ... it ran each single vector as a chain of `taps` dependent
  // FMAs (a 7x7 map under a 5x5 kernel, 5 vectors: 100 cycles of latency after the 4-block's 100).
  for (; q + 8 * L <= n; q += 8 * L) flat_block<V, 8>(src, off, w, taps, bias, q, out);
  switch ((n - q + L - 1) / L) {
    case 7: return flat_block<V, 7>(src, off, w, taps, bias, q, out);
    case 6: return flat_block<V, 6>(src, off, w, taps, bias, q, out);
    case 5: return flat_block<V, 5>(src, off, w, taps, bias, q, out);
    case 4: return flat_block<V, 4>(src, off, w, taps, bias, q, out);
    case 3: return flat_block<V, 3>(src, off, w, taps, bias, q, out);
    case 2: return flat_block<V, 2>(src, off, w, taps, bias, q, out);
    case 1: return flat_block<V, 1>(src, off, w, taps, bias, q, out);
    default: return;
  }
}

// NV vectors of outputs of G planes at once (f32_dwconv.h, `direct`; plane g at x + g * n, its
// taps at w + g * taps): vectors jv[0..NV) (kGather, each at an address of its own a tap) or
// j0, j0 + 1, ... (one address a tap). The taps in order over NV * G chains as flat_block, then
// residual and clamp in registers and the store. kPlain: every tap of these vectors lies inside
// the plane, so the loads take no mask; otherwise each load is masked to the plane (the planes
// share their geometry, so their masks). On Zen 5 a mask is one more load and a kmov per tap and
// vector: README.md, "Direct".
template <class V, int NV, int G, bool kPlain, bool kGather>
inline void direct_block(const float* x, const int32_t* off, const uint16_t* masks, const float* w, size_t taps,
                         const float* bias, size_t nvec, const uint32_t* jv, size_t j0, size_t n, const float* res,
                         typename V::Vec vlo, typename V::Vec vhi, float* y) {
  constexpr size_t L = V::kLanes;
  auto vec = [&](int v) { return kGather ? static_cast<size_t>(jv[v]) : j0 + static_cast<size_t>(v); };
  typename V::Vec acc[G][NV];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[g][v] = V::set1(bias[g]);
  for (size_t t = 0; t < taps; ++t) {
    const uint16_t* m = masks + t * nvec;
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
      const typename V::Vec wv = V::set1(w[static_cast<size_t>(g) * taps + t]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) {
        // Signed: off[t] < 0 for the rows above; masked lanes are not read.
        const float* s = x + (static_cast<ptrdiff_t>(vec(v) * L + static_cast<size_t>(g) * n) + off[t]);
        acc[g][v] = V::fma(wv, kPlain ? V::load(s) : V::load_lanes(s, m[vec(v)]), acc[g][v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const size_t q = vec(v) * L, o = static_cast<size_t>(g) * n + q;
      if (q + L <= n) {
        typename V::Vec r = res ? V::add(acc[g][v], V::load(res + o)) : acc[g][v];
        V::store(y + o, V::min(vhi, V::max(vlo, r)));
      } else {
        typename V::Vec r = res ? V::add(acc[g][v], V::load_n(res + o, n - q)) : acc[g][v];
        V::store_n(y + o, V::min(vhi, V::max(vlo, r)), n - q);
      }
    }
}

// Vectors jv[0..count) (kGather) or 0..count of G planes: blocks of 8 / G vectors (8 chains: two
// FMA pipes of 4-cycle latency), the rest as one block. Two planes at a time keep 8 chains where
// one plane has few vectors: a 7x7 map is 4 zmm, 4 chains of 25 dependent FMAs under a 5x5 kernel.
template <class V, int G, bool kPlain, bool kGather>
void direct_vectors(const float* x, const int32_t* off, const uint16_t* masks, const float* w, size_t taps,
                    const float* bias, size_t n, size_t nvec, const uint32_t* jv, size_t count, const float* res,
                    typename V::Vec vlo, typename V::Vec vhi, float* y) {
  constexpr int NB = 8 / G;
  static_assert(NB == 8 || NB == 4);
  size_t i = 0;
  for (; i + NB <= count; i += NB)
    direct_block<V, NB, G, kPlain, kGather>(x, off, masks, w, taps, bias, nvec, jv + i, i, n, res, vlo, vhi, y);
  const uint32_t* r = jv + i;
  if constexpr (NB == 8) {
    switch (count - i) {
      case 7:
        return direct_block<V, 7, G, kPlain, kGather>(x, off, masks, w, taps, bias, nvec, r, i, n, res, vlo,
                                                         vhi, y);
      case 6:
        return direct_block<V, 6, G, kPlain, kGather>(x, off, masks, w, taps, bias, nvec, r, i, n, res, vlo,
                                                         vhi, y);
      case 5:
        return direct_block<V, 5, G, kPlain, kGather>(x, off, masks, w, taps, bias, nvec, r, i, n, res, vlo,
                                                         vhi, y);
      case 4:
        return direct_block<V, 4, G, kPlain, kGather>(x, off, masks, w, taps, bias, nvec, r, i, n, res, vlo,
                                                         vhi, y);
      default: break;
    }
  }
  switch (count - i) {
    case 3:
      return direct_block<V, 3, G, kPlain, kGather>(x, off, masks, w, taps, bias, nvec, r, i, n, res, vlo,
                                                       vhi, y);
    case 2:
      return direct_block<V, 2, G, kPlain, kGather>(x, off, masks, w, taps, bias, nvec, r, i, n, res, vlo,
                                                       vhi, y);
    case 1:
      return direct_block<V, 1, G, kPlain, kGather>(x, off, masks, w, taps, bias, nvec, r, i, n, res, vlo,
                                                       vhi, y);
    default: return;
  }
}

// All vectors of G planes: the first n_plain of `order` with plain loads, then the rest masked;
// with n_plain = 0 (f32_dwconv_direct_order's choice where plain vectors are few), all masked in
// plane order.
template <class V, int G>
void direct_planes(const float* x, const int32_t* off, const uint16_t* masks, const uint32_t* order, size_t n_plain,
                   const float* w, size_t taps, const float* bias, size_t n, const float* res, typename V::Vec vlo,
                   typename V::Vec vhi, float* y) {
  const size_t nvec = (n + V::kLanes - 1) / V::kLanes;
  if (n_plain == 0)
    return direct_vectors<V, G, false, false>(x, off, masks, w, taps, bias, n, nvec, order, nvec, res, vlo, vhi, y);
  direct_vectors<V, G, true, true>(x, off, masks, w, taps, bias, n, nvec, order, n_plain, res, vlo, vhi, y);
  direct_vectors<V, G, false, true>(x, off, masks, w, taps, bias, n, nvec, order + n_plain, nvec - n_plain, res, vlo,
                                    vhi, y);
}

// planes consecutive planes of n outputs each: two at a time, then the odd one alone.
template <class V>
void direct(const float* x, const int32_t* off, const uint16_t* masks, const uint32_t* order, size_t n_plain,
            const float* w, size_t taps, const float* bias, size_t n, size_t planes, const float* res, float lo,
            float hi, float* y) {
  const typename V::Vec vlo = V::set1(lo), vhi = V::set1(hi);
  size_t c = 0;
  for (; c + 2 <= planes; c += 2)
    direct_planes<V, 2>(x + c * n, off, masks, order, n_plain, w + c * taps, taps, bias + c, n,
                        res ? res + c * n : nullptr, vlo, vhi, y + c * n);
  if (c < planes)
    direct_planes<V, 1>(x + c * n, off, masks, order, n_plain, w + c * taps, taps, bias + c, n,
                        res ? res + c * n : nullptr, vlo, vhi, y + c * n);
}

// NV output vectors of one plane at stride 2 (f32_dwconv.h, `direct_s2`): vectors k0 .. k0 + NV
// of the plane's OH * nvr, row-major, so a block spans output rows where rows are short (a 28-wide
// row is two zmm: 8 chains come from 4 rows). Per kernel row and column pair, one masked load pair
// and one deinterleave feed the even and the odd tap; the taps in order, then residual and clamp.
// The masks are read from memory as they are used (a mask moved from a general register takes the
// shuffle port the deinterleave needs), and a row outside the plane is the zero vector, not loaded.
template <class V, int NV, size_t K>
inline void s2_block(const float* x, const ::lowbit::F32DwconvS2Geometry& g, const uint16_t* masks, const float* w,
                     float bias, size_t k0, const float* res, typename V::Vec vlo, typename V::Vec vhi, float* y) {
  constexpr size_t L = V::kLanes, npairs = (K + 1) / 2;
  const ptrdiff_t W = static_cast<ptrdiff_t>(g.W);
  typename V::Vec acc[NV];
  size_t q[NV];            // the output offset of the vector's first lane
  ptrdiff_t row0[NV];      // the input row of kernel row 0
  const float* base[NV];   // input row 0's column of the vector's first tap (not read unless in the row)
  const uint16_t* mk[NV];  // the vector's masks: [column pair][half]
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    const size_t oh = (k0 + static_cast<size_t>(v)) / g.nvr, j = (k0 + static_cast<size_t>(v)) % g.nvr;
    acc[v] = V::set1(bias);
    q[v] = oh * g.OW + L * j;
    row0[v] = static_cast<ptrdiff_t>(2 * oh) - static_cast<ptrdiff_t>(g.pad_top);
    base[v] = x + (static_cast<ptrdiff_t>(2 * L * j) - static_cast<ptrdiff_t>(g.pad_left));
    mk[v] = masks + 2 * j * npairs;
  }
  const typename V::Vec zero = V::set1(0.0f);
  for (size_t kh = 0; kh < K; ++kh) {
    const float* wr = w + kh * K;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const ptrdiff_t ih = row0[v] + static_cast<ptrdiff_t>(kh);
      const bool in = ih >= 0 && ih < static_cast<ptrdiff_t>(g.H);
      const float* s = base[v] + (in ? ih * W : 0);
#pragma GCC unroll 4
      for (size_t p = 0; p < npairs; ++p) {
        typename V::Vec e = zero, o = zero;
        if (in)
          V::deinterleave(V::load_lanes(s + 2 * p, mk[v][2 * p]), V::load_lanes(s + 2 * p + L, mk[v][2 * p + 1]), e,
                          o);
        acc[v] = V::fma(V::set1(wr[2 * p]), e, acc[v]);
        if (2 * p + 1 < K) acc[v] = V::fma(V::set1(wr[2 * p + 1]), o, acc[v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    const size_t ow = L * ((k0 + static_cast<size_t>(v)) % g.nvr), n = g.OW - ow < L ? g.OW - ow : L;
    typename V::Vec r = res ? V::add(acc[v], load_k<V>(res + q[v], n)) : acc[v];
    store_k<V>(y + q[v], V::min(vhi, V::max(vlo, r)), n);
  }
}

// planes consecutive planes at stride 2, a K x K kernel: each plane's OH * nvr vectors in blocks of
// 8 (8 chains: two FMA pipes of 4-cycle latency), the rest as one block.
template <class V, size_t K>
void direct_s2_k(const float* x, const ::lowbit::F32DwconvS2Geometry& g, const uint16_t* masks, const float* w,
                 const float* bias, size_t planes, const float* res, float lo, float hi, float* y) {
  const typename V::Vec vlo = V::set1(lo), vhi = V::set1(hi);
  const size_t n_in = g.H * g.W, n_out = g.OH * g.OW, nv = g.OH * g.nvr;
  for (size_t c = 0; c < planes; ++c) {
    const float* xc = x + c * n_in;
    const float* rc = res ? res + c * n_out : nullptr;
    const float* wc = w + c * K * K;
    float* yc = y + c * n_out;
    size_t k = 0;
    for (; k + 8 <= nv; k += 8) s2_block<V, 8, K>(xc, g, masks, wc, bias[c], k, rc, vlo, vhi, yc);
    switch (nv - k) {
      case 7: s2_block<V, 7, K>(xc, g, masks, wc, bias[c], k, rc, vlo, vhi, yc); break;
      case 6: s2_block<V, 6, K>(xc, g, masks, wc, bias[c], k, rc, vlo, vhi, yc); break;
      case 5: s2_block<V, 5, K>(xc, g, masks, wc, bias[c], k, rc, vlo, vhi, yc); break;
      case 4: s2_block<V, 4, K>(xc, g, masks, wc, bias[c], k, rc, vlo, vhi, yc); break;
      case 3: s2_block<V, 3, K>(xc, g, masks, wc, bias[c], k, rc, vlo, vhi, yc); break;
      case 2: s2_block<V, 2, K>(xc, g, masks, wc, bias[c], k, rc, vlo, vhi, yc); break;
      case 1: s2_block<V, 1, K>(xc, g, masks, wc, bias[c], k, rc, vlo, vhi, yc); break;
      default: break;
    }
  }
}

// The kernel sizes MobileNet / EfficientNet / MnasNet use, each unrolled (a runtime tap loop cost
// more than the arithmetic); the driver takes the split path for the others.
template <class V>
void direct_s2(const float* x, const ::lowbit::F32DwconvS2Geometry& g, const uint16_t* masks, const float* w,
               const float* bias, size_t planes, const float* res, float lo, float hi, float* y) {
  if (g.KH == 3 && g.KW == 3) return direct_s2_k<V, 3>(x, g, masks, w, bias, planes, res, lo, hi, y);
  if (g.KH == 5 && g.KW == 5) return direct_s2_k<V, 5>(x, g, masks, w, bias, planes, res, lo, hi, y);
}

// y[oh][ow] = min(max(flat[oh * ld + ow] + res[oh][ow], lo), hi): whole vectors, then lanes.
template <class V>
void store_rows(const float* flat, size_t ld, size_t oh_n, size_t ow_n, const float* res, float lo, float hi,
                float* y) {
  constexpr size_t L = V::kLanes;
  const typename V::Vec vlo = V::set1(lo), vhi = V::set1(hi);
  for (size_t oh = 0; oh < oh_n; ++oh) {
    const float* f = flat + oh * ld;
    float* yr = y + oh * ow_n;
    const float* rr = res ? res + oh * ow_n : nullptr;
    size_t ow = 0;
    for (; ow + L <= ow_n; ow += L) {
      typename V::Vec v = V::load(f + ow);
      if (rr) v = V::add(v, V::load(rr + ow));
      V::store(yr + ow, V::min(vhi, V::max(vlo, v)));
    }
    if (ow < ow_n) {
      const size_t n = ow_n - ow;
      typename V::Vec v = V::load_n(f + ow, n);
      if (rr) v = V::add(v, V::load_n(rr + ow, n));
      V::store_n(yr + ow, V::min(vhi, V::max(vlo, v)), n);
    }
  }
}

// y[i] = x[i] for i < n.
template <class V>
inline void copy_row(const float* x, size_t n, float* y) {
  constexpr size_t L = V::kLanes;
  size_t i = 0;
  for (; i + L <= n; i += L) V::store(y + i, V::load(x + i));
  if (i < n) V::store_n(y + i, V::load_n(x + i, n - i), n - i);
}

// even[i] = x[2i] for i < (n + 1) / 2, odd[i] = x[2i + 1] for i < n / 2.
template <class V>
inline void deinterleave_row(const float* x, size_t n, float* even, float* odd) {
  constexpr size_t L = V::kLanes;
  size_t i = 0;
  for (; 2 * (i + L) <= n; i += L) {
    typename V::Vec e, o;
    V::deinterleave(x + 2 * i, e, o);
    V::store(even + i, e);
    V::store(odd + i, o);
  }
  // The last m < 2L floats as two partial vectors: element by element, a 28-wide row (14x14 and
  // 28x28 maps, stride 2) was all tail on AVX-512, and the split took 3x the FMAs' time.
  if (const size_t m = n - 2 * i; m > 0) {
    typename V::Vec e, o;
    V::deinterleave(load_k<V>(x + 2 * i, m), m > L ? V::load_n(x + 2 * i + L, m - L) : V::set1(0.0f), e, o);
    store_k<V>(even + i, e, (m + 1) / 2);
    store_k<V>(odd + i, o, m / 2);
  }
}

// An H x W plane into its phase planes (f32_dwconv.h) over a scratch whose padding is zero.
template <class V>
void split(const float* x, const ::lowbit::F32DwconvSplit& g, float* src) {
  const size_t plane = g.Hp * g.Wp, pl = g.pad_left;
  for (size_t ih = 0; ih < g.H; ++ih) {
    const size_t ph = ih + g.pad_top;  // padded row: phase row ph / SH of row phase ph % SH
    float* rows = src + (ph % g.SH) * g.SW * plane + (ph / g.SH) * g.Wp;
    const float* xr = x + ih * g.W;
    if (g.SW == 1) {
      copy_row<V>(xr, g.W, rows + pl);
    } else if (g.SW == 2) {  // input column iw goes to column phase (iw + pl) % 2, at (iw + pl) / 2
      deinterleave_row<V>(xr, g.W, rows + (pl % 2) * plane + pl / 2, rows + ((pl + 1) % 2) * plane + (pl + 1) / 2);
    } else {
      for (size_t iw = 0; iw < g.W; ++iw) rows[((iw + pl) % g.SW) * plane + (iw + pl) / g.SW] = xr[iw];
    }
  }
}

// r[i][j] -> r[j][i] for the L x L floats of L vectors: log2(L) rounds of pairwise deinterleaves
// (the inverse of the zip network that transposes, so itself a transpose; 64 two-source permutes
// for AVX-512's 16 x 16, 8 unzips for NEON's 4 x 4).
template <class V>
inline void transpose(typename V::Vec (&r)[V::kLanes]) {
  constexpr size_t L = V::kLanes;
  for (size_t round = 1; round < L; round *= 2) {
    typename V::Vec t[L];
#pragma GCC unroll 16
    for (size_t i = 0; i < L / 2; ++i) V::deinterleave(r[2 * i], r[2 * i + 1], t[i], t[i + L / 2]);
#pragma GCC unroll 16
    for (size_t i = 0; i < L; ++i) r[i] = t[i];
  }
}

// NB output pixels of the channels-on-lanes layout from their positions in the padded input:
// base[j] is pixel j's top-left tap, the taps in order. Depthwise: one weight vector a tap for all
// NB chains, times each pixel's vector of channels. kDense (a grouped conv's group of cn <= L
// channels, f32_dwconv.h `lanes_group_dense`): per tap, per input channel ic in order, the weight
// vector over the output channels (w is [tap][ic][L]) times input lane ic broadcast.
template <class V, bool kDense, int NB>
inline void lanes_block(const float* const* base, const ::lowbit::F32DwconvLanesGeometry& g, const float* w,
                        size_t cn, typename V::Vec vbias, float* o) {
  constexpr size_t L = V::kLanes;
  typename V::Vec acc[NB];
#pragma GCC unroll 8
  for (int j = 0; j < NB; ++j) acc[j] = vbias;
  size_t t = 0;
  for (size_t kh = 0; kh < g.KH; ++kh)
    for (size_t kw = 0; kw < g.KW; ++kw, ++t) {
      const size_t off = (kh * g.DH * g.PW + kw * g.DW) * L;
      if constexpr (kDense) {
        for (size_t ic = 0; ic < cn; ++ic) {
          const typename V::Vec wv = V::load(w + (t * L + ic) * L);
#pragma GCC unroll 8
          for (int j = 0; j < NB; ++j) acc[j] = V::fma(wv, V::set1(base[j][off + ic]), acc[j]);
        }
      } else {
        const typename V::Vec wv = V::load(w + t * L);
#pragma GCC unroll 8
        for (int j = 0; j < NB; ++j) acc[j] = V::fma(wv, V::load(base[j] + off), acc[j]);
      }
    }
#pragma GCC unroll 8
  for (int j = 0; j < NB; ++j) V::store(o + static_cast<size_t>(j) * L, acc[j]);
}

// One group of cn <= L channels (f32_dwconv.h, `lanes_group`): the planes transposed into the
// padded [PH][PW][L] scratch, every output pixel a vector of L channels (8 pixels' chains at a
// time: no split, no dropped columns, the same work at any stride), then transposed back with
// residual and clamp. Pixels run over the flat plane, so a 7x7 map is 49 / L transposes' worth, not
// 7 row tails.
// kDense: a grouped conv's group (lanes_block), not cn depthwise channels.
template <class V, bool kDense = false>
void lanes_group(const float* x, size_t cn, const ::lowbit::F32DwconvLanesGeometry& g, const float* w,
                 const float* bias, const float* res, float lo, float hi, float* y, float* scratch) {
  constexpr size_t L = V::kLanes;
  using Vec = typename V::Vec;
  const size_t n_in = g.H * g.W, n_out = g.OH * g.OW;
  float* const t_in = scratch;
  float* const t_out = scratch + g.PH * g.PW * L;
  const Vec zero = V::set1(0.0f);
  // In: L input pixels at a time, one vector per channel, transposed to one vector per pixel.
  size_t ih = 0, iw = 0;
  for (size_t q = 0; q < n_in; q += L) {
    const size_t k = n_in - q < L ? n_in - q : L;
    Vec r[L];
#pragma GCC unroll 16
    for (size_t c = 0; c < L; ++c) r[c] = c < cn ? load_k<V>(x + c * n_in + q, k) : zero;
    transpose<V>(r);
    for (size_t j = 0; j < k; ++j) {
      V::store(t_in + ((ih + g.pad_top) * g.PW + iw + g.pad_left) * L, r[j]);
      if (++iw == g.W) iw = 0, ++ih;
    }
  }
  // The convolution, NB = 8 output pixels a block (two FMA pipes of 4-cycle latency), the rest as
  // one block.
  const Vec vbias = V::load(bias);
  const float* base[8];
  size_t oh = 0, ow = 0;
  for (size_t q = 0; q < n_out;) {
    const size_t nb = n_out - q < 8 ? n_out - q : 8;
    for (size_t j = 0; j < nb; ++j) {
      base[j] = t_in + (oh * g.SH * g.PW + ow * g.SW) * L;
      if (++ow == g.OW) ow = 0, ++oh;
    }
    float* o = t_out + q * L;
    switch (nb) {
      case 8: lanes_block<V, kDense, 8>(base, g, w, cn, vbias, o); break;
      case 7: lanes_block<V, kDense, 7>(base, g, w, cn, vbias, o); break;
      case 6: lanes_block<V, kDense, 6>(base, g, w, cn, vbias, o); break;
      case 5: lanes_block<V, kDense, 5>(base, g, w, cn, vbias, o); break;
      case 4: lanes_block<V, kDense, 4>(base, g, w, cn, vbias, o); break;
      case 3: lanes_block<V, kDense, 3>(base, g, w, cn, vbias, o); break;
      case 2: lanes_block<V, kDense, 2>(base, g, w, cn, vbias, o); break;
      default: lanes_block<V, kDense, 1>(base, g, w, cn, vbias, o); break;
    }
    q += nb;
  }
  // Out: L output pixels at a time back to one vector per channel, residual and clamp on the way.
  const Vec vlo = V::set1(lo), vhi = V::set1(hi);
  for (size_t q = 0; q < n_out; q += L) {
    const size_t k = n_out - q < L ? n_out - q : L;
    Vec r[L];
#pragma GCC unroll 16
    for (size_t j = 0; j < L; ++j) r[j] = j < k ? V::load(t_out + (q + j) * L) : zero;
    transpose<V>(r);
    for (size_t c = 0; c < cn; ++c) {
      Vec v = res ? V::add(r[c], load_k<V>(res + c * n_out + q, k)) : r[c];
      store_k<V>(y + c * n_out + q, V::min(vhi, V::max(vlo, v)), k);
    }
  }
}

}  // namespace
}  // namespace LOWBIT_KERNEL_NS::dwconv

// Each ISA file's two functions and its set from its traits type V.
#define LOWBIT_F32_DWCONV_KERNELS(ISA, V, DIRECT_MAX_N, S2_MAX_N)                                                \
  void f32_dwconv_flat__##ISA(const float* src, const int32_t* off, const float* w, size_t taps, float bias,       \
                              size_t n, float* out) {                                                             \
    ::LOWBIT_KERNEL_NS::dwconv::flat<V>(src, off, w, taps, bias, n, out);                                         \
  }                                                                                                               \
  void f32_dwconv_store__##ISA(const float* flat, size_t ld, size_t oh, size_t ow, const float* res, float lo,     \
                               float hi, float* y) {                                                              \
    ::LOWBIT_KERNEL_NS::dwconv::store_rows<V>(flat, ld, oh, ow, res, lo, hi, y);                                  \
  }                                                                                                               \
  void f32_dwconv_split__##ISA(const float* x, const ::lowbit::F32DwconvSplit& g, float* src) {                   \
    ::LOWBIT_KERNEL_NS::dwconv::split<V>(x, g, src);                                                              \
  }                                                                                                               \
  void f32_dwconv_direct__##ISA(const float* x, const int32_t* off, const uint16_t* masks, const uint32_t* order, \
                                size_t n_plain, const float* w, size_t taps, const float* bias, size_t n,         \
                                size_t planes, const float* res, float lo, float hi, float* y) {                  \
    ::LOWBIT_KERNEL_NS::dwconv::direct<V>(x, off, masks, order, n_plain, w, taps, bias, n, planes, res, lo, hi, y); \
  }                                                                                                               \
  void f32_dwconv_direct_s2__##ISA(const float* x, const ::lowbit::F32DwconvS2Geometry& g, const uint16_t* masks, \
                                   const float* w, const float* bias, size_t planes, const float* res, float lo,  \
                                   float hi, float* y) {                                                          \
    ::LOWBIT_KERNEL_NS::dwconv::direct_s2<V>(x, g, masks, w, bias, planes, res, lo, hi, y);                       \
  }                                                                                                               \
  void f32_dwconv_lanes__##ISA(const float* x, size_t cn, const ::lowbit::F32DwconvLanesGeometry& g, const float* w, \
                               const float* bias, const float* res, float lo, float hi, float* y, float* scratch) { \
    ::LOWBIT_KERNEL_NS::dwconv::lanes_group<V>(x, cn, g, w, bias, res, lo, hi, y, scratch);                       \
  }                                                                                                               \
  void f32_gconv_lanes__##ISA(const float* x, size_t cn, const ::lowbit::F32DwconvLanesGeometry& g, const float* w, \
                              const float* bias, const float* res, float lo, float hi, float* y, float* scratch) { \
    ::LOWBIT_KERNEL_NS::dwconv::lanes_group<V, true>(x, cn, g, w, bias, res, lo, hi, y, scratch);                 \
  }                                                                                                               \
  const ::lowbit::F32DwconvKernels* f32_dwconv_##ISA() {                                                          \
    static constexpr ::lowbit::F32DwconvKernels k = {#ISA,                                                        \
                                                      V::kLanes,                                                  \
                                                      &f32_dwconv_flat__##ISA,                                    \
                                                      &f32_dwconv_store__##ISA,                                   \
                                                      &f32_dwconv_split__##ISA,                                   \
                                                      V::kMaskedLoads ? &f32_dwconv_direct__##ISA : nullptr,      \
                                                      V::kMaskedLoads ? &f32_dwconv_direct_s2__##ISA : nullptr,   \
                                                      &f32_dwconv_lanes__##ISA,                                   \
                                                      &f32_gconv_lanes__##ISA,                                    \
                                                      DIRECT_MAX_N,                                               \
                                                      S2_MAX_N};                                                  \
    return &k;                                                                                                    \
  }
