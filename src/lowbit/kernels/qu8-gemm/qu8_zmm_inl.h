#pragma once
// The zmm requantization epilogue of the qu8 AVX-512 kernels (GEMM and depthwise), with the zmm
// conversions it needs. Included after x86_simd.h by files built with the AVX-512 flags.
#include <cstdint>
#include <cstring>

#include "lowbit/kernels/qu8-gemm/qu8_gemm.h"

namespace LOWBIT_KERNEL_NS {
namespace {

using ::lowbit::Qu8GemmEpilogue;

// zmm conversions and fault-suppressing masked loads. SIMDe 0.7 (the tests/simde build) has none
// of them: there each is composed through memory from ymm halves and scalar copies, the same
// operation lane for lane, so that build still checks this file's arithmetic.
#ifdef LOWBIT_USE_SIMDE
inline __m512 zcvtepi32_ps(__m512i v) {
  alignas(64) int32_t t[16];
  alignas(64) float r[16];
  _mm512_store_si512(t, v);
  _mm256_store_ps(r, _mm256_cvtepi32_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(t))));
  _mm256_store_ps(r + 8, _mm256_cvtepi32_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(t + 8))));
  return _mm512_load_ps(r);
}
inline __m512i zcvtps_epi32(__m512 v) {
  alignas(64) float t[16];
  alignas(64) int32_t r[16];
  _mm512_store_ps(t, v);
  _mm256_store_si256(reinterpret_cast<__m256i*>(r), _mm256_cvtps_epi32(_mm256_load_ps(t)));
  _mm256_store_si256(reinterpret_cast<__m256i*>(r + 8), _mm256_cvtps_epi32(_mm256_load_ps(t + 8)));
  return _mm512_load_si512(r);
}
inline __m512i zcvtepu8_epi32(__m128i v) {
  alignas(64) int32_t r[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(r), _mm256_cvtepu8_epi32(v));
  _mm256_store_si256(reinterpret_cast<__m256i*>(r + 8), _mm256_cvtepu8_epi32(_mm_unpackhi_epi64(v, v)));
  return _mm512_load_si512(r);
}
inline __m128i zcvtepi32_epi8(__m512i v) {
  alignas(64) int32_t t[16];
  alignas(16) uint8_t r[16];
  _mm512_store_si512(t, v);
  for (int i = 0; i < 16; ++i) r[i] = static_cast<uint8_t>(t[i]);
  return _mm_load_si128(reinterpret_cast<const __m128i*>(r));
}
inline __m512i zmaskz_loadu_epi32(__mmask16 m, const int32_t* p) {
  alignas(64) int32_t r[16];
  for (int i = 0; i < 16; ++i) r[i] = (m >> i) & 1 ? p[i] : 0;
  return _mm512_load_si512(r);
}
inline __m512 zmaskz_loadu_ps(__mmask16 m, const float* p) {
  alignas(64) float r[16];
  for (int i = 0; i < 16; ++i) r[i] = (m >> i) & 1 ? p[i] : 0.0f;
  return _mm512_load_ps(r);
}
#else
inline __m512 zcvtepi32_ps(__m512i v) { return _mm512_cvtepi32_ps(v); }
inline __m512i zcvtps_epi32(__m512 v) { return _mm512_cvtps_epi32(v); }
inline __m512i zcvtepu8_epi32(__m128i v) { return _mm512_cvtepu8_epi32(v); }
inline __m128i zcvtepi32_epi8(__m512i v) { return _mm512_cvtepi32_epi8(v); }
inline __m512i zmaskz_loadu_epi32(__mmask16 m, const int32_t* p) { return _mm512_maskz_loadu_epi32(m, p); }
inline __m512 zmaskz_loadu_ps(__mmask16 m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
#endif

// The epilogue's constants, read once per tile into registers: stores through the u8 output may
// alias anything, so reading them from `e` per row would reload them after every store.
struct ZmmRequant {
  const float *scale, *bias;
  const uint8_t* res;
  size_t ld_res;
  __m512 res_scale, qmin, qmax;
  __m512i res_zp, zp_y;
  explicit ZmmRequant(const Qu8GemmEpilogue& e)
      : scale(e.scale), bias(e.bias), res(e.res), ld_res(e.ld_res), res_scale(_mm512_set1_ps(e.res_scale)),
        qmin(_mm512_set1_ps(e.qmin)), qmax(_mm512_set1_ps(e.qmax)), res_zp(_mm512_set1_epi32(e.res_zp)),
        zp_y(_mm512_set1_epi32(e.zp_y)) {}
  // The same constants for the columns `cols` to the right (a second vector of a row).
  static ZmmRequant shifted(const ZmmRequant& q, size_t cols) {
    ZmmRequant s = q;
    if (s.res) s.res += cols;
    return s;
  }
};

// Requantizes one row of 16 accumulators and stores nc bytes: the contract's steps of
// requant_store_row<16> (qu8_ukernel_inl.h), lane for lane, on one zmm instead of two ymm halves;
// at K = 64 (ResNet's 1x1 expansions) the epilogue is as much work as the dot products. Partial
// rows use masked loads and stores (SIMDe 0.7 has none: that build goes through memory).
inline void requant_store_row_zmm(__m512i acc, size_t nc, int r, uint8_t* c, const ZmmRequant& q) {
  __m512 t = _mm512_fmadd_ps(zcvtepi32_ps(acc), _mm512_set1_ps(q.scale[r]), _mm512_set1_ps(q.bias[r]));
#ifndef LOWBIT_USE_SIMDE
  const __mmask16 m = nc >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << nc) - 1);
  if (q.res) {
    const __m512i rv = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, q.res + r * q.ld_res));
    t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(rv, q.res_zp)), q.res_scale, t);
  }
  t = _mm512_min_ps(_mm512_max_ps(t, q.qmin), q.qmax);
  // In [0, 255] after adding zp_y, so vpmovdb's truncation to bytes is exact.
  _mm_mask_storeu_epi8(c, m, _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(t), q.zp_y)));
#else
  alignas(16) uint8_t tmp[16] = {};
  if (q.res) {
    const uint8_t* rp = q.res + r * q.ld_res;
    if (nc < 16) {
      std::memcpy(tmp, rp, nc);
      rp = tmp;
    }
    const __m512i rv = zcvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rp)));
    t = _mm512_fmadd_ps(zcvtepi32_ps(_mm512_sub_epi32(rv, q.res_zp)), q.res_scale, t);
  }
  t = _mm512_min_ps(_mm512_max_ps(t, q.qmin), q.qmax);
  const __m128i bytes = zcvtepi32_epi8(_mm512_add_epi32(zcvtps_epi32(t), q.zp_y));
  _mm_store_si128(reinterpret_cast<__m128i*>(tmp), bytes);
  std::memcpy(c, tmp, nc);
#endif
}

}  // namespace
}  // namespace LOWBIT_KERNEL_NS
