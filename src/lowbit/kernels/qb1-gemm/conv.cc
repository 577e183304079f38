// The binary conv driver: bit packing, im2col of words into pixel panels, the micro-kernel per
// channel panel, and the exact zero-padding correction. ISA-independent (baseline flags).
#include <algorithm>
#include <cmath>
#include <limits>

#include "lowbit/common/error.h"
#include "lowbit/kernels/qb1-gemm/qb1_gemm.h"

namespace lowbit {

const std::vector<const Qb1GemmKernels*>& qb1_gemm_kernel_sets() {
  static const std::vector<const Qb1GemmKernels*> sets = [] {
    std::vector<const Qb1GemmKernels*> v;
#if defined(__x86_64__)
    v.push_back(qb1_gemm_kernels_avx512popcnt());
    v.push_back(qb1_gemm_kernels_avx2());
#elif defined(__aarch64__)
    v.push_back(qb1_gemm_kernels_neon());
#endif
    v.push_back(qb1_gemm_kernels_portable());
    return v;
  }();
  return sets;
}

const Qb1GemmKernels& qb1_gemm_kernels_for(const Target& t) {
  for (const Qb1GemmKernels* k : qb1_gemm_kernel_sets())
    if (k->runs_on(t)) return *k;
  return *qb1_gemm_kernels_portable();
}

std::string check_qb1_conv_shape(const Qb1ConvShape& s) {
  if (s.C < 1 || s.H < 1 || s.W < 1 || s.M < 1) return "empty input or output channels";
  if (s.KH < 1 || s.KW < 1 || s.SH < 1 || s.SW < 1 || s.DH < 1 || s.DW < 1)
    return "kernel, stride and dilation must be >= 1";
  if (s.PT < 0 || s.PL < 0 || s.PB < 0 || s.PR < 0) return "negative padding";
  if (s.OH() < 1 || s.OW() < 1) return "the kernel does not fit the padded input";
  // The accumulator holds KH * KW * C; int32 with room for the +-K range.
  if (s.KH * s.KW * s.C > (int64_t{1} << 30)) return "K = KH * KW * C above 2^30";
  return "";
}

std::vector<uint64_t> pack_b1_nchw(const float* x, int64_t C, int64_t H, int64_t W) {
  const int64_t CW = (C + 63) / 64;
  std::vector<uint64_t> out(static_cast<size_t>(H * W * CW), 0);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < H * W; ++i)
      if (x[c * H * W + i] < 0.0f)  // 0 (and -0) is +1, as the weights
        out[static_cast<size_t>(i * CW + c / 64)] |= uint64_t{1} << (c % 64);
  return out;
}

Qb1PackedWeights pack_b1_weights(const Qb1ConvShape& s, const float* w, const Qb1GemmKernels& k) {
  const std::string bad = check_qb1_conv_shape(s);
  if (!bad.empty()) throw Error("binary conv: " + bad);
  Qb1PackedWeights p;
  p.shape = s;
  p.mr = k.mr;
  p.split_nibbles = k.split_nibbles;
  const int64_t CW = s.CW(), taps = s.KH * s.KW, per = k.split_nibbles ? 2 : 1;
  p.kw = taps * CW;
  p.panels.assign(static_cast<size_t>(s.M * p.kw * per), 0);
  p.tap_sum.assign(static_cast<size_t>(s.M * taps), 0);
  for (int64_t m0 = 0; m0 < s.M; m0 += k.mr) {
    const int64_t rows = std::min<int64_t>(k.mr, s.M - m0);  // the last panel is `rows` wide
    uint64_t* panel = p.panels.data() + m0 * p.kw * per;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t m = m0 + r;
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t c = 0; c < s.C; ++c) {
          const bool neg = w[(m * s.C + c) * taps + t] < 0.0f;
          p.tap_sum[static_cast<size_t>(m * taps + t)] += neg ? -1 : 1;
          if (neg) panel[((t * CW + c / 64) * rows + r) * per] |= uint64_t{1} << (c % 64);
        }
    }
    if (k.split_nibbles)
      for (int64_t i = 0; i < p.kw * rows; ++i) {
        const uint64_t w = panel[i * 2];
        panel[i * 2] = w & 0x0f0f0f0f0f0f0f0full;
        panel[i * 2 + 1] = (w >> 4) & 0x0f0f0f0f0f0f0f0full;
      }
  }
  // Border classes (see Qb1PackedWeights): the set of kernel rows outside the image of each output
  // row (likewise columns); a class id per distinct set, the empty set first.
  const auto classify = [](int64_t n_out, int64_t k, int64_t stride, int64_t pad, int64_t dil, int64_t n_in,
                           std::vector<int32_t>& cls, std::vector<std::vector<bool>>& sets) {
    sets.assign(1, std::vector<bool>(static_cast<size_t>(k), false));
    cls.assign(static_cast<size_t>(n_out), 0);
    for (int64_t o = 0; o < n_out; ++o) {
      std::vector<bool> out(static_cast<size_t>(k));
      for (int64_t t = 0; t < k; ++t) {
        const int64_t i = o * stride - pad + t * dil;
        out[static_cast<size_t>(t)] = i < 0 || i >= n_in;
      }
      const auto it = std::find(sets.begin(), sets.end(), out);
      cls[static_cast<size_t>(o)] = static_cast<int32_t>(it - sets.begin());
      if (it == sets.end()) sets.push_back(out);
    }
  };
  std::vector<std::vector<bool>> rsets, csets;
  classify(s.OH(), s.KH, s.SH, s.PT, s.DH, s.H, p.row_class, rsets);
  classify(s.OW(), s.KW, s.SW, s.PL, s.DW, s.W, p.col_class, csets);
  p.col_classes = static_cast<int32_t>(csets.size());
  p.classes = static_cast<int32_t>(rsets.size() * csets.size());
  p.border_corr.assign(static_cast<size_t>(s.M * p.classes), 0);
  for (int64_t m = 0; m < s.M; ++m)
    for (size_t rc = 0; rc < rsets.size(); ++rc)
      for (size_t cc = 0; cc < csets.size(); ++cc) {
        int32_t sum = 0;
        for (int64_t t = 0; t < taps; ++t)
          if (rsets[rc][static_cast<size_t>(t / s.KW)] || csets[cc][static_cast<size_t>(t % s.KW)])
            sum += p.tap_sum[static_cast<size_t>(m * taps + t)];
        p.border_corr[static_cast<size_t>(m * p.classes) + rc * csets.size() + cc] = sum;
      }
  return p;
}

void qb1_conv2d(const Qb1GemmKernels& k, const Qb1PackedWeights& w, const uint64_t* x, B1Padding pad, int32_t* out,
                int64_t p_begin, int64_t p_end) {
  const int64_t P = w.shape.OH() * w.shape.OW();
  p_begin = std::max<int64_t>(p_begin, 0);
  if (p_begin < std::min(p_end, P)) qb1_conv2d_block(k, w, x, pad, out + p_begin, static_cast<size_t>(P), p_begin, p_end);
}

void qb1_conv2d_block(const Qb1GemmKernels& k, const Qb1PackedWeights& w, const uint64_t* x, B1Padding pad,
                      int32_t* out, size_t ldo, int64_t p_begin, int64_t p_end) {
  const Qb1ConvShape& s = w.shape;
  if (w.mr != k.mr || w.split_nibbles != k.split_nibbles)
    throw Error(std::string("binary conv: weights packed for another kernel than ") + k.name);
  const int64_t per = k.split_nibbles ? 2 : 1;
  const int64_t CW = s.CW(), taps = s.KH * s.KW, OW = s.OW(), P = s.OH() * OW;
  p_begin = std::max<int64_t>(p_begin, 0);
  p_end = std::min(p_end, P);
  if (p_begin >= p_end) return;
  const int32_t ktot = static_cast<int32_t>(taps * s.C);
  const size_t nr = static_cast<size_t>(k.nr);
  // The -1 pad word: every channel bit set, the tail bits past C clear.
  // Per-thread scratch, kept across calls: this runs once per layer per inference and thread.
  thread_local std::vector<uint64_t> minus, panel, split;
  thread_local std::vector<std::pair<int32_t, int32_t>> border;  // (panel column, border class) of zero-padded pixels
  minus.assign(static_cast<size_t>(CW), ~uint64_t{0});
  if (s.C % 64) minus.back() = (uint64_t{1} << (s.C % 64)) - 1;
  // The panel, 64-byte aligned for the vector loads (8 words of slack to align within).
  panel.resize(static_cast<size_t>(w.kw) * nr + 8);
  uint64_t* const bp = panel.data() + ((64 - reinterpret_cast<uintptr_t>(panel.data()) % 64) % 64) / 8;
  // Split kernels read the panel as, per k, nr low-nibble words then nr high-nibble words: split
  // here once per panel, for all M / MR tiles (in the tile, the split cost 6 of ~54 vector
  // operations per k and took the registers that then spilled accumulators).
  uint64_t* bs = bp;
  if (k.split_nibbles) {
    split.resize(static_cast<size_t>(w.kw) * nr * 2 + 8);
    bs = split.data() + ((64 - reinterpret_cast<uintptr_t>(split.data()) % 64) % 64) / 8;
  }
  for (int64_t p0 = p_begin; p0 < p_end; p0 += static_cast<int64_t>(nr)) {
    const size_t nc = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(nr), p_end - p0));
    border.clear();
    // A full panel inside one output row: for each tap whose nr input pixels all lie inside the
    // image, the words are a strided copy (contiguous for stride 1 and CW = 1). The per-pixel
    // loop below, with its bounds checks, took a fifth of a ResNet-18-binary conv's time.
    const int64_t oh0 = p0 / OW, ow0 = p0 % OW;
    const bool one_row = nc == nr && ow0 + static_cast<int64_t>(nr) <= OW;
    uint64_t done = 0;  // taps copied by the fast path (bit t; taps <= 64 there)
    if (one_row && taps <= 64)
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t ih = oh0 * s.SH - s.PT + (t / s.KW) * s.DH, iw = ow0 * s.SW - s.PL + (t % s.KW) * s.DW;
        if (ih < 0 || ih >= s.H || iw < 0 || iw + (static_cast<int64_t>(nr) - 1) * s.SW >= s.W) continue;
        const uint64_t* src = x + (ih * s.W + iw) * CW;
        uint64_t* dst = bp + static_cast<size_t>(t * CW) * nr;
        const int64_t step = s.SW * CW;
        for (int64_t cw = 0; cw < CW; ++cw)
          for (size_t j = 0; j < nr; ++j) dst[static_cast<size_t>(cw) * nr + j] = src[static_cast<int64_t>(j) * step + cw];
        done |= uint64_t{1} << t;
      }
    // Every tap copied (an interior panel): only the border classes below. Pixels step through
    // (oh, ow) without dividing (two idivs per pixel were a tenth of this function's time).
    const bool all_done = taps <= 64 && done == (taps == 64 ? ~uint64_t{0} : (uint64_t{1} << taps) - 1);
    int64_t oh = oh0, ow = ow0;
    for (size_t j = 0; j < nr; ++j, ow = ow + 1 == OW ? (++oh, 0) : ow + 1) {
      for (int64_t t = 0; t < taps && !all_done; ++t) {
        if (done >> t & 1) continue;
        uint64_t* dst = bp + static_cast<size_t>(t * CW) * nr + j;
        const int64_t ih = oh * s.SH - s.PT + (t / s.KW) * s.DH, iw = ow * s.SW - s.PL + (t % s.KW) * s.DW;
        const bool inside = j < nc && ih >= 0 && ih < s.H && iw >= 0 && iw < s.W;
        const uint64_t* src = inside ? x + (ih * s.W + iw) * CW : nullptr;
        for (int64_t cw = 0; cw < CW; ++cw)
          dst[static_cast<size_t>(cw) * nr] =
              inside ? src[cw] : (pad == B1Padding::minus_one && j < nc ? minus[static_cast<size_t>(cw)] : 0);
      }
      if (pad == B1Padding::zero && j < nc) {
        const int32_t cls = w.row_class[static_cast<size_t>(oh)] * w.col_classes + w.col_class[static_cast<size_t>(ow)];
        if (cls != 0) border.emplace_back(static_cast<int32_t>(j), cls);
      }
    }
    if (k.split_nibbles)
      for (int64_t kk = 0; kk < w.kw; ++kk)
        for (size_t j = 0; j < nr; ++j) {
          const uint64_t v = bp[static_cast<size_t>(kk) * nr + j];
          bs[static_cast<size_t>(kk) * 2 * nr + j] = v & 0x0f0f0f0f0f0f0f0full;
          bs[static_cast<size_t>(kk) * 2 * nr + nr + j] = (v >> 4) & 0x0f0f0f0f0f0f0f0full;
        }
    for (int64_t m0 = 0; m0 < s.M; m0 += k.mr) {
      const int64_t rows = std::min<int64_t>(k.mr, s.M - m0);
      k.main[rows](static_cast<size_t>(w.kw), w.panels.data() + m0 * w.kw * per, bs, ktot,
                   out + static_cast<size_t>(m0) * ldo + static_cast<size_t>(p0 - p_begin), ldo, nc);
    }
    // A zero-padded tap was counted as a word of +1s: its contribution there was the tap's weight
    // sum, and the true one is 0. Each border pixel takes back its class's sum over its padded
    // taps, once per channel (rows outermost: the panel's nr results of a row are adjacent).
    if (!border.empty())
      for (int64_t m = 0; m < s.M; ++m) {
        int32_t* row = out + static_cast<size_t>(m) * ldo + static_cast<size_t>(p0 - p_begin);
        const int32_t* corr = w.border_corr.data() + m * w.classes;
        for (auto [j, cls] : border) row[j] -= corr[cls];
      }
  }
}

}  // namespace lowbit
