#pragma once
// Shared by the qu8 ISA sources (each includes it after x86_simd.h and compiles its own copy with
// its own flags; all of them have AVX2 + FMA): im2col row gathering, the u8 x 4 VNNI packer and
// the exact requantization epilogue on ymm vectors.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "lowbit/kernels/qu8-gemm/qu8_gemm.h"

namespace LOWBIT_KERNEL_NS {
namespace {

// t receives nr bytes of row xk (x + koff[k]) for the panel's runs (in pixel order); t must hold
// nr + 32 bytes (vector moves spill past a run; the gap after it is filled and the next run
// written after that, bytes past nr are ignored). Bytes no run covers are set to zp: the gaps
// between runs too, where a conv's padding falls without a padded copy.
inline void qu8_gather_row(const uint8_t* x, size_t avail, int64_t koff, const ::lowbit::Qu8Im2colRun* runs,
                           size_t nruns, size_t stride, size_t nr, uint8_t zp, uint8_t* t) {
  size_t covered = 0;
  for (size_t s = 0; s < nruns; ++s) {
    const ::lowbit::Qu8Im2colRun& run = runs[s];
    const size_t off = static_cast<size_t>(koff + run.src), len = static_cast<size_t>(run.len);
    const uint8_t* src = x + off;
    uint8_t* dst = t + run.dst;
    if (static_cast<size_t>(run.dst) > covered) std::memset(t + covered, zp, static_cast<size_t>(run.dst) - covered);
    covered = static_cast<size_t>(run.dst) + len;
    if (stride == 1 && len <= 16 && off + 16 <= avail) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
    } else if (stride == 2 && len <= 16 && off + 32 <= avail) {
      const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
      const __m128i lo = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)), even);
      const __m128i hi = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16)), even);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi64(lo, hi));
    } else {
      for (size_t i = 0; i < len; ++i) dst[i] = src[i * stride];
    }
  }
  if (covered < nr) std::memset(t + covered, zp, nr - covered);
}

// Loads the NR pixels of one im2col row (x + koff[k]) of a panel into the low NR bytes of a vector;
// pixels no run covers read zp. Built once per pack call from the panel's runs.
//
// Stride 1 and 2 (every conv of a CNN body) take no detour through memory: run s's pixels
// dst..dst+len-1 sit at bytes dst..dst+len-1 of one 16-byte load from koff + src - dst * stride
// (de-interleaved for stride 2), so each run is a load and a byte blend under a mask made here.
// The bytes the blends drop may lie outside the run, never outside [0, avail): rows whose loads
// would leave the buffer (a few at its very ends) and other strides fall back to qu8_gather_row.
template <int NR>
class Qu8RowGather {
 public:
  Qu8RowGather(const ::lowbit::Qu8Im2colRun* runs, size_t nruns, size_t stride, uint8_t zp)
      : runs_(runs), nruns_(nruns), stride_(stride), zp_(zp) {
    direct_ = nruns == 1 && runs[0].len == NR && stride == 1;
    blend_ = (stride == 1 || stride == 2) && nruns <= static_cast<size_t>(NR);
    if (!blend_ || nruns == 0) return;  // no runs (a tap whose pixels all fall in padding): all zp
    const __m128i iota = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    lo_ = INT64_MAX;
    hi_ = INT64_MIN;
    for (size_t s = 0; s < nruns; ++s) {
      const int32_t dst = runs[s].dst, end = runs[s].dst + runs[s].len;  // <= NR <= 16
      base_[s] = runs[s].src - static_cast<int64_t>(dst) * static_cast<int64_t>(stride);
      lo_ = std::min(lo_, base_[s]);
      hi_ = std::max(hi_, base_[s]);
      mask_[s] = _mm_and_si128(_mm_cmpgt_epi8(iota, _mm_set1_epi8(static_cast<char>(dst - 1))),
                               _mm_cmplt_epi8(iota, _mm_set1_epi8(static_cast<char>(end))));
    }
    hi_ += static_cast<int64_t>(16 * stride);  // one past the last byte a load reads
  }

  __m128i row(const uint8_t* x, size_t avail, int64_t koff) const {
    if (direct_) {
      const uint8_t* s = x + koff + runs_[0].src;
      return NR == 16 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(s))
                      : _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s));
    }
    if (blend_ && koff + lo_ >= 0 && koff + hi_ <= static_cast<int64_t>(avail)) {
      __m128i v = _mm_set1_epi8(static_cast<char>(zp_));
      const uint8_t* xk = x + koff;
      if (stride_ == 1) {
        for (size_t s = 0; s < nruns_; ++s)
          v = _mm_blendv_epi8(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(xk + base_[s])), mask_[s]);
      } else {
        const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
        for (size_t s = 0; s < nruns_; ++s) {
          const __m128i* p = reinterpret_cast<const __m128i*>(xk + base_[s]);
          const __m128i lo = _mm_shuffle_epi8(_mm_loadu_si128(p), even);
          const __m128i hi = _mm_shuffle_epi8(_mm_loadu_si128(p + 1), even);
          v = _mm_blendv_epi8(v, _mm_unpacklo_epi64(lo, hi), mask_[s]);
        }
      }
      return v;
    }
    alignas(16) uint8_t t[NR + 32];
    qu8_gather_row(x, avail, koff, runs_, nruns_, stride_, NR, zp_, t);
    return NR == 16 ? _mm_load_si128(reinterpret_cast<const __m128i*>(t))
                    : _mm_loadl_epi64(reinterpret_cast<const __m128i*>(t));
  }

 private:
  const ::lowbit::Qu8Im2colRun* runs_;
  size_t nruns_, stride_;
  uint8_t zp_;
  bool direct_ = false, blend_ = false;
  int64_t lo_ = 0, hi_ = 0;
  int64_t base_[NR];
  __m128i mask_[NR];
};

// Packs kg groups of 4 k values of an NR-pixel panel as raw u8, pixel-major within a group:
// b[(g * NR + j) * 4 + i] = x[koff[4g + i] + pixel j] (the VNNI operand layout). Always inlined
// into each ISA's own packer (qu8_pack_u8x4__<isa>), so every copy carries its ISA in its name.
template <int NR>
[[gnu::always_inline]] inline void pack_u8x4(size_t kg, const uint8_t* x, size_t avail, const int64_t* koff,
                                             const ::lowbit::Qu8Im2colRun* runs, size_t nruns, size_t stride, size_t nr,
                                             uint8_t zp_x, void* b_) {
  __m128i* b = static_cast<__m128i*>(b_);
  const Qu8RowGather<NR> gather(runs, nruns, stride, zp_x);
  for (size_t g = 0; g < kg; ++g) {
    __m128i r[4];
    for (int i = 0; i < 4; ++i) r[i] = gather.row(x, avail, koff[4 * g + i]);
    const __m128i lo01 = _mm_unpacklo_epi8(r[0], r[1]), lo23 = _mm_unpacklo_epi8(r[2], r[3]);
    _mm_store_si128(b++, _mm_unpacklo_epi16(lo01, lo23));  // pixels 0-3
    _mm_store_si128(b++, _mm_unpackhi_epi16(lo01, lo23));  // pixels 4-7
    if constexpr (NR == 16) {
      const __m128i hi01 = _mm_unpackhi_epi8(r[0], r[1]), hi23 = _mm_unpackhi_epi8(r[2], r[3]);
      _mm_store_si128(b++, _mm_unpacklo_epi16(hi01, hi23));
      _mm_store_si128(b++, _mm_unpackhi_epi16(hi01, hi23));
    }
  }
}

// Partial rows (the last panel of a map) go through memory out of line, so that the hot path of
// the epilogue holds no call: around a call GCC keeps the tile's accumulators on the stack.
[[gnu::noinline]] inline void copy_bytes(uint8_t* dst, const uint8_t* src, size_t n) { std::memcpy(dst, src, n); }

// 16 (NR=16) or 8 (NR=8) u8 values into NR/8 int32 vectors.
template <int NR>
inline void load_u8_rows(const uint8_t* p, size_t n, __m256i (&v)[NR / 8]) {
  alignas(16) uint8_t tmp[16];
  if (n < NR) {
    copy_bytes(tmp, p, n);
    p = tmp;
  }
  v[0] = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  if constexpr (NR == 16) v[1] = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8)));
}

// The epilogue's constants, read once per tile into registers: stores through the u8 output may
// alias anything, so reading them from the Qu8GemmEpilogue per row would reload them after every
// store. `res` is the only field a caller moves between calls.
struct YmmRequant {
  const float *scale, *bias;
  const uint8_t* res;
  size_t ld_res;
  __m256 res_scale, qmin, qmax;
  __m256i res_zp, zp_y;
  explicit YmmRequant(const ::lowbit::Qu8GemmEpilogue& e)
      : scale(e.scale), bias(e.bias), res(e.res), ld_res(e.ld_res), res_scale(_mm256_set1_ps(e.res_scale)),
        qmin(_mm256_set1_ps(e.qmin)), qmax(_mm256_set1_ps(e.qmax)), res_zp(_mm256_set1_epi32(e.res_zp)),
        zp_y(_mm256_set1_epi32(e.zp_y)) {}
};

// Requantizes NR int32 accumulators of row r and stores nc bytes (README.md, exact contract).
template <int NR>
inline void requant_store_row(const __m256i (&acc)[NR / 8], size_t nc, int r, uint8_t* c, const YmmRequant& rq) {
  constexpr int NV = NR / 8;
  const __m256 scale = _mm256_set1_ps(rq.scale[r]), bias = _mm256_set1_ps(rq.bias[r]);
  __m256 t[NV];
  for (int v = 0; v < NV; ++v) t[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[v]), scale, bias);
  if (rq.res) {
    __m256i rv[NV];
    load_u8_rows<NR>(rq.res + r * rq.ld_res, nc, rv);
    for (int v = 0; v < NV; ++v)
      t[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(rv[v], rq.res_zp)), rq.res_scale, t[v]);
  }
  // Clamping to integer bounds before rounding equals rounding then clamping, and keeps the
  // conversion in range; the packs below then never saturate.
  __m256i q[NV];
  for (int v = 0; v < NV; ++v)
    q[v] = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(t[v], rq.qmin), rq.qmax)), rq.zp_y);
  __m128i bytes;
  if constexpr (NR == 16) {
    // packs works per 128-bit lane: [q0 0-3, q1 0-3 | q0 4-7, q1 4-7]; restore pixel order.
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[0], q[1]), 0xD8);
    bytes = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
  } else {
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q[0]), _mm256_extracti128_si256(q[0], 1));
    bytes = _mm_packus_epi16(w, w);
  }
  if (nc == NR) {
    if constexpr (NR == 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(c), bytes);
    else _mm_storel_epi64(reinterpret_cast<__m128i*>(c), bytes);
  } else {
    alignas(16) uint8_t tmp[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), bytes);
    copy_bytes(c, tmp, nc);
  }
}

}  // namespace
}  // namespace LOWBIT_KERNEL_NS
