#pragma once
// VEX vpdpbusd (AVX-VNNI: Alder Lake and later, Zen 5) for the files built with the AVX-VNNI flags
// (qu8-gemm/avxvnni.cc, qu8-dwconv/avxvnni.cc). Include after x86_simd.h.
#include "lowbit/kernels/qu8-gemm/qu8_gemm.h"  // LOWBIT_KERNEL_NS

namespace LOWBIT_KERNEL_NS {
namespace {

inline __m256i dpbusd(__m256i acc, __m256i u8, __m256i s8) {
#ifdef LOWBIT_USE_SIMDE
  return _mm256_dpbusd_epi32(acc, u8, s8);  // SIMDe has the EVEX name only; same arithmetic
#else
  return _mm256_dpbusd_avx_epi32(acc, u8, s8);
#endif
}

}  // namespace
}  // namespace LOWBIT_KERNEL_NS
