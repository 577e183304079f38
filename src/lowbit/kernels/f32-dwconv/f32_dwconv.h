#pragma once
// Depthwise (one filter per channel) fp32 convolution as flat polyphase planes (README.md): a
// conv of stride SH x SW over a padded plane is a 1-D convolution over its SH * SW phase planes
// (phase (a, b) holds padded rows a, a + SH, ... and columns b, b + SW, ...), laid out one after
// another, each Wp = ceil(PW / SW) wide. Output (oh, ow) sits at flat q = oh * Wp + ow, and tap
// (kh, kw) reads src[off + q] with off = the start of phase (kh*DH % SH, kw*DW % SW) +
// (kh*DH / SH) * Wp + kw*DW / SW: every tap is one vector load and one FMA per L outputs, with no
// row tails and no stride shuffles (a 7x7 map is 5 zmm of flat outputs, not 7 mostly empty rows).
// The Wp - OW columns past each row's end are computed and dropped by the store.
#include <cstddef>
#include <cstdint>
#include <vector>

#ifndef LOWBIT_KERNEL_NS
#define LOWBIT_KERNEL_NS lowbit
#endif

namespace lowbit {

// The phase split of one H x W plane: padded by pad_top / pad_left (and whatever the phase planes,
// Hp x Wp each, hold past it), strides SH x SW.
struct F32DwconvSplit {
  size_t H, W, pad_top, pad_left, SH, SW, Hp, Wp;
};

// The channels-on-lanes layout (README.md, "Channels on the lanes"): one group of up to `lanes`
// channels, an H x W input plane each, zero-padded to PH x PW, strides SH x SW, dilations DH x DW,
// an OH x OW output plane each.
struct F32DwconvLanesGeometry {
  size_t H, W, OH, OW, KH, KW, SH, SW, DH, DW, pad_top, pad_left, PH, PW;
};

// The stride-2 direct path (`direct_s2`): an H x W input plane read in place, an OH x OW output
// plane, a KH x KW kernel at stride 2 and dilation 1, padding pad_top / pad_left (any bottom / right
// padding is implied by OH, OW). nvr: vectors per output row (OW rounded up to lanes).
struct F32DwconvS2Geometry {
  size_t H, W, OH, OW, KH, KW, pad_top, pad_left, nvr;
};

struct F32DwconvKernels {
  const char* isa;  // "avx512": the suffix of its functions' names
  size_t lanes;     // floats per vector: n is rounded up to a multiple of it
  // out[q] = bias + sum_t w[t] * src[off[t] + q] for q < n rounded up to whole vectors (src readable
  // and out writable that far). The taps are summed in order t = 0, 1, ...
  void (*flat)(const float* src, const int32_t* off, const float* w, size_t taps, float bias, size_t n, float* out);
  // y[oh][ow] = min(max(flat[oh * ld + ow] + res[oh][ow], lo), hi) for oh < OH, ow < OW; res may be
  // null. NaN passes through the clamp, as in the reference.
  void (*store)(const float* flat, size_t ld, size_t OH, size_t OW, const float* res, float lo, float hi, float* y);
  // x's plane into src's SH * SW phase planes, writing only the input's positions (the padding
  // must already be zero there): row copies at stride 1, even / odd deinterleaves at stride 2.
  void (*split)(const float* x, const F32DwconvSplit& g, float* src);
  // Stride 1 with the output as large as the input ("same" padding), where the ISA has masked
  // loads (null elsewhere): the taps read the unpadded plane in place, no split and no store pass.
  // For `planes` consecutive planes p of n (= H * W) floats (x, res and y advance by n a plane, w
  // by taps, bias by 1) and q < n, y[q] = min(max(bias + sum_t w[t] * x[q + off[t]] + res[q], lo),
  // hi), the taps in order, where x[q + off[t]] is read only in the lanes whose bit is set in
  // masks[t * nvec + q / lanes] (nvec = n rounded up to whole vectors, / lanes) and is 0 in the
  // others: fma(w, 0, acc) there, exactly what the padded plane's zeros give, so the bits are those
  // of flat + store. off may be negative (rows above the plane); res may be null. order lists
  // the nvec vectors, each once: its first n_plain are vectors whose masks are full on every tap,
  // read with plain loads; n_plain = 0 runs all vectors masked in plane order, whatever order
  // holds (f32_dwconv_direct_order builds both).
  void (*direct)(const float* x, const int32_t* off, const uint16_t* masks, const uint32_t* order, size_t n_plain,
                 const float* w, size_t taps, const float* bias, size_t n, size_t planes, const float* res, float lo,
                 float hi, float* y);
  // Stride 2 in both axes, a 3x3 or 5x5 kernel (the sizes it is unrolled for; it writes nothing
  // for others), where the ISA has masked loads (null elsewhere): no split and no store
  // pass. For `planes` consecutive planes (x advances by H * W, y and res by OH * OW, w by KH * KW,
  // bias by 1), y[oh][ow] = min(max(bias + sum_t w[t] * x[2 oh + kh - pad_top][2 ow + kw - pad_left]
  // + res[oh][ow], lo), hi), the taps t = kh * KW + kw in order, with 0 for the positions outside
  // the plane: fma(w, 0, acc) there, so the bits are those of split + flat + store. Each kernel row
  // reads 2 * lanes consecutive input floats per output vector and column pair p (ow0 = lanes * j,
  // from column 2 * ow0 + 2p - pad_left) and deinterleaves them into the even (kw = 2p) and odd
  // (kw = 2p + 1) taps; masks[(j * npairs + p) * 2 + h], npairs = (KW + 1) / 2, has bit i set
  // where float h * lanes + i of those lies inside the row (0 <= column < W). Rows outside the
  // plane are not read.
  void (*direct_s2)(const float* x, const F32DwconvS2Geometry& g, const uint16_t* masks, const float* w,
                    const float* bias, size_t planes, const float* res, float lo, float hi, float* y);
  // Channels on the lanes, for one group of cn <= lanes channels: x holds their cn input planes
  // (H * W floats each, consecutive), y their output planes (OH * OW each), res the residual's
  // (like y, or null). w holds the group's weights tap-major, lanes floats a tap (w[t * lanes + c],
  // zero for c >= cn), bias lanes floats. scratch: PH * PW * lanes floats whose padding (every
  // position outside the input's rows and columns) is zero and stays so, then OH * OW * lanes
  // floats. Each output is bias, then fma(w[t], x, acc) per tap in tap order with the padding's
  // zeros, plus the residual, then clamped to [lo, hi] (NaN passes): the bits of flat + store.
  void (*lanes_group)(const float* x, size_t cn, const F32DwconvLanesGeometry& g, const float* w, const float* bias,
                      const float* res, float lo, float hi, float* y, float* scratch);
  // The same layout and scratch for one group of a grouped conv with cn <= lanes input and output
  // channels: w is [tap][ic][lanes] (w[(t * lanes + ic) * lanes + oc], zero for oc >= cn), and each
  // output is bias, then per tap in order and per input channel ic < cn in order
  // fma(w[t][ic][oc], x_ic, acc), plus the residual, then clamped.
  void (*lanes_group_dense)(const float* x, size_t cn, const F32DwconvLanesGeometry& g, const float* w,
                            const float* bias, const float* res, float lo, float hi, float* y, float* scratch);
  // The largest plane (H * W) that `direct` pays on (README.md: AVX2's vmaskmovps and its mask
  // setup cost more than the split above 14x14; AVX-512's masked loads are plain loads).
  size_t direct_max_n;
  // The largest output plane (OH * OW) that `direct_s2` is taken for (0: never; README.md).
  size_t direct_s2_max_n;
};

// The order `direct` takes its nvec vectors in, from its masks ([tap][vector], `lanes` bits
// each): first, in increasing order, the vectors that every tap reads wholly inside the plane (on
// a 112 x 112 map under 3x3, 5 of each row's 7 zmm: their loads need no mask), then the others.
// Returns how many come first, or 0 where they are fewer than half: gathered, each vector at an
// address of its own, cost more than the masks they save (Zen 5, 1 thread: 3x3 192 @28, 2 of 7
// plain, 0.050 -> 0.055 ms; 3x3 32 @112, 70%, 0.149 -> 0.121; README.md, "Direct").
inline size_t f32_dwconv_direct_order(const uint16_t* masks, size_t taps, size_t nvec, size_t lanes,
                                      uint32_t* order) {
  const uint32_t full = (1u << lanes) - 1;
  auto plain = [&](size_t j) {
    for (size_t t = 0; t < taps; ++t)
      if (masks[t * nvec + j] != full) return false;
    return true;
  };
  size_t first = 0;
  for (size_t j = 0; j < nvec; ++j)
    if (plain(j)) order[first++] = static_cast<uint32_t>(j);
  for (size_t j = 0, k = first; j < nvec; ++j)
    if (!plain(j)) order[k++] = static_cast<uint32_t>(j);
  return 2 * first >= nvec ? first : 0;
}

// The stride-2 direct path's geometry for a KH x KW kernel (3x3 or 5x5) and its masks (`direct_s2`):
// per output vector of a row and column pair, the floats of its two loads that lie inside the row.
inline F32DwconvS2Geometry f32_dwconv_s2_plan(size_t H, size_t W, size_t OH, size_t OW, size_t KH, size_t KW,
                                              size_t pad_top, size_t pad_left, size_t lanes,
                                              std::vector<uint16_t>& masks) {
  const size_t nvr = (OW + lanes - 1) / lanes, npairs = (KW + 1) / 2;
  masks.assign(nvr * npairs * 2, 0);
  for (size_t j = 0; j < nvr; ++j)
    for (size_t p = 0; p < npairs; ++p)
      for (size_t i = 0; i < 2 * lanes; ++i) {
        const ptrdiff_t col = static_cast<ptrdiff_t>(2 * lanes * j + 2 * p + i) - static_cast<ptrdiff_t>(pad_left);
        if (col >= 0 && col < static_cast<ptrdiff_t>(W))
          masks[(j * npairs + p) * 2 + i / lanes] |= static_cast<uint16_t>(1u << (i % lanes));
      }
  return {H, W, OH, OW, KH, KW, pad_top, pad_left, nvr};
}

}  // namespace lowbit

namespace LOWBIT_KERNEL_NS {
const ::lowbit::F32DwconvKernels* f32_dwconv_avx2();    // x86-64 builds
const ::lowbit::F32DwconvKernels* f32_dwconv_avx512();  // x86-64 builds
const ::lowbit::F32DwconvKernels* f32_dwconv_neon();    // AArch64 builds
}  // namespace LOWBIT_KERNEL_NS
