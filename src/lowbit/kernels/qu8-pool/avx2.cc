// AVX2 u8 pooling: MaxPool takes vpmaxub over 32 output pixels per step (the phase layout makes
// every tap a contiguous load); GlobalAveragePool sums with vpsadbw (8 bytes -> one u64 lane,
// exact) and requantizes like the reference (qu8_mean_requant).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lowbit/kernels/qu8-pool/qu8_avgpool_inl.h"
#include "lowbit/kernels/qu8-pool/qu8_pool.h"

namespace lowbit {

void qu8_pool_phase_row__avx2(const uint8_t* src, size_t W, size_t pad_left, size_t SW, size_t ld_phase,
                              uint8_t* dst) {
  if (SW == 1) {
    std::memset(dst, 0, pad_left);
    std::memcpy(dst + pad_left, src, W);
    std::memset(dst + pad_left + W, 0, ld_phase - pad_left - W);
    return;
  }
  std::memset(dst, 0, SW * ld_phase);
  size_t i = 0;
  if (SW == 2) {
    // Even source bytes go to one phase, odd ones to the other: 32 bytes -> 16 + 16 per step.
    const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,  //
                                           0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    uint8_t* even = dst + (pad_left & 1) * ld_phase + pad_left / 2;
    uint8_t* odd = dst + ((pad_left + 1) & 1) * ld_phase + (pad_left + 1) / 2;
    for (; i + 32 <= W; i += 32) {
      const __m256i v = _mm256_permute4x64_epi64(
          _mm256_shuffle_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)), split), 0xD8);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(even + i / 2), _mm256_castsi256_si128(v));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(odd + i / 2), _mm256_extracti128_si256(v, 1));
    }
    // 16 more (ResNet's 112-wide rows end here), 8 + 8 bytes.
    if (i + 16 <= W) {
      const __m128i v = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)),
                                         _mm256_castsi256_si128(split));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(even + i / 2), v);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(odd + i / 2), _mm_unpackhi_epi64(v, v));
      i += 16;
    }
    // The last 1-15 bytes through a zeroed block: the zeros past the row land in its right
    // padding (zero anyway, inside ld_phase's 32 spare bytes). Byte by byte, the tails of
    // SqueezeNet's 111- and 27-wide rows made its stride-2 MaxPools 2.5x slower.
    if (i < W) {
      alignas(16) uint8_t tail[16] = {};
      std::memcpy(tail, src + i, W - i);
      const __m128i v =
          _mm_shuffle_epi8(_mm_load_si128(reinterpret_cast<const __m128i*>(tail)), _mm256_castsi256_si128(split));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(even + i / 2), v);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(odd + i / 2), _mm_unpackhi_epi64(v, v));
      i = W;
    }
  }
  // The rest one byte at a time, phase and position stepped rather than divided out per byte.
  size_t phase = (pad_left + i) % SW, pos = (pad_left + i) / SW;
  for (; i < W; ++i) {
    dst[phase * ld_phase + pos] = src[i];
    if (++phase == SW) phase = 0, ++pos;
  }
}

void qu8_maxpool2d_chw__avx2(const uint8_t* x, const Qu8PoolGeometry& g, uint8_t* y) {
  const size_t ld_row = g.SW * g.ld_phase;
  // Offset of each kernel column within a padded row's phases (computed per tap past 64).
  size_t kw_off[64];
  const size_t nkw = std::min<size_t>(g.KW, 64);
  for (size_t kw = 0; kw < nkw; ++kw) kw_off[kw] = (kw * g.DW) % g.SW * g.ld_phase + kw * g.DW / g.SW;
  for (size_t oh = 0; oh < g.OH; ++oh) {
    const uint8_t* base = x + oh * g.SH * ld_row;
    uint8_t* yr = y + oh * g.OW;
    for (size_t ow = 0; ow < g.OW; ow += 32) {
      __m256i acc = _mm256_setzero_si256();
      for (size_t kh = 0; kh < g.KH; ++kh) {
        const uint8_t* row = base + kh * g.DH * ld_row + ow;
        for (size_t kw = 0; kw < g.KW; ++kw) {
          const size_t off = kw < 64 ? kw_off[kw] : (kw * g.DW) % g.SW * g.ld_phase + kw * g.DW / g.SW;
          acc = _mm256_max_epu8(acc, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + off)));
        }
      }
      const size_t n = g.OW - ow;
      if (n >= 32) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(yr + ow), acc);
      } else {
        alignas(32) uint8_t tmp[32];
        _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), acc);
        std::memcpy(yr + ow, tmp, n);
      }
    }
  }
}

void qu8_maxpool2d_3x3s2_chw__avx2(const uint8_t* x, size_t H, size_t W, size_t pad_top, size_t pad_left, size_t OH,
                                   size_t OW, uint8_t* row, uint8_t* y) {
  std::memset(row, 0, qu8_maxpool_3x3s2_row_bytes(W, pad_left, OW));
  uint8_t* const vrow = row + pad_left;
  // Per 128-bit lane: its 8 even bytes, then its 8 odd ones; vpermq then gathers the evens low.
  const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,  //
                                         0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  auto deinterleave = [&](const uint8_t* p) {
    return _mm256_permute4x64_epi64(_mm256_shuffle_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), split),
                                    0xD8);
  };
  for (size_t oh = 0; oh < OH; ++oh) {
    // The window's rows inside the plane (at least one for a valid pool); a missing one repeats.
    const int64_t top = static_cast<int64_t>(2 * oh) - static_cast<int64_t>(pad_top);
    const uint8_t* r[3];
    size_t n = 0;
    for (int64_t ih = top; ih < top + 3; ++ih)
      if (ih >= 0 && ih < static_cast<int64_t>(H)) r[n++] = x + static_cast<size_t>(ih) * W;
    if (n == 0) {
      std::memset(vrow, 0, W);
    } else {
      for (size_t k = n; k < 3; ++k) r[k] = r[0];
      size_t j = 0;
      for (; j + 32 <= W; j += 32) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r[0] + j));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r[1] + j));
        const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r[2] + j));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(vrow + j), _mm256_max_epu8(a, _mm256_max_epu8(b, c)));
      }
      for (; j + 16 <= W; j += 16) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[0] + j));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[1] + j));
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r[2] + j));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(vrow + j), _mm_max_epu8(a, _mm_max_epu8(b, c)));
      }
      for (; j < W; ++j) vrow[j] = std::max(r[0][j], std::max(r[1][j], r[2][j]));
    }
    // Output ow covers row[2 ow .. 2 ow + 2]: evens at 2 ow, odds at 2 ow, evens at 2 ow + 2.
    uint8_t* yr = y + oh * OW;
    for (size_t ow = 0; ow < OW; ow += 16) {
      const __m256i a = deinterleave(row + 2 * ow), b = deinterleave(row + 2 * ow + 2);
      const __m128i m = _mm_max_epu8(_mm_max_epu8(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1)),
                                     _mm256_castsi256_si128(b));
      if (OW - ow >= 16) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(yr + ow), m);
      } else {
        alignas(16) uint8_t tmp[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(tmp), m);
        std::memcpy(yr + ow, tmp, OW - ow);
      }
    }
  }
}

void qu8_global_avgpool__avx2(const uint8_t* x, size_t n, size_t channels, const Qu8MeanRequant& r, uint8_t* y) {
  const __m256i zero = _mm256_setzero_si256();
  for (size_t c = 0; c < channels; ++c, x += n) {
    __m256i s0 = zero, s1 = zero;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
      s0 = _mm256_add_epi64(s0, _mm256_sad_epu8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), zero));
      s1 = _mm256_add_epi64(s1,
                            _mm256_sad_epu8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 32)), zero));
    }
    if (i + 32 <= n) {
      s0 = _mm256_add_epi64(s0, _mm256_sad_epu8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), zero));
      i += 32;
    }
    if (i + 16 <= n) {
      const __m128i v = _mm_sad_epu8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)), _mm_setzero_si128());
      s1 = _mm256_add_epi64(s1, _mm256_zextsi128_si256(v));
      i += 16;
    }
    const __m256i s = _mm256_add_epi64(s0, s1);
    const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    int64_t sum = _mm_cvtsi128_si64(_mm_add_epi64(h, _mm_unpackhi_epi64(h, h)));
    for (; i < n; ++i) sum += x[i];
    y[c] = qu8_mean_requant(sum, n, r);
  }
}

void qu8_avgpool2d_chw__avx2(const uint8_t* x, const Qu8AvgGeometry& g, uint32_t* scratch, uint8_t* y) {
  qu8pool::avgpool_plane(x, g, scratch, y);
}

}  // namespace lowbit
