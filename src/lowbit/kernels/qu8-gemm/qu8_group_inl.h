#pragma once
// Group-wise weight scales (QuantParams::block_size) on the qu8 tiles: the driver runs one tile per
// group of K in partial mode (the group's int32 sums), then these two per ISA file:
//   group_fma:    acc[r][j] = fmaf(float(partial[r][j]), scale[r], acc[r][j])   (acc starts at the bias)
//   group_finish: the int8 contract's last steps from acc: + residual, clamp, round half to even,
//                 + zp_y, store nc bytes per row
// (kernels/reference/quant.cc, qconv_grouped, gives the same sequence). Plain loops that each ISA
// file's flags vectorise (vfmadd / fmla, vroundps / frinti), with internal linkage so that no ISA's
// copy stands in for another's.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "lowbit/kernels/qu8-gemm/qu8_gemm.h"

namespace lowbit {
namespace {

[[maybe_unused]] inline void qu8_group_fma_impl(const int32_t* __restrict partial, const float* __restrict scale,
                                                size_t mr, size_t nr, float* __restrict acc) {
  for (size_t r = 0; r < mr; ++r) {
    const float s = scale[r];
    for (size_t j = 0; j < nr; ++j) acc[r * nr + j] = std::fma(static_cast<float>(partial[r * nr + j]), s, acc[r * nr + j]);
  }
}

[[maybe_unused]] inline void qu8_group_finish_impl(const float* __restrict acc, size_t mr, size_t nr, size_t nc,
                                                   uint8_t* __restrict c, size_t ldc, const Qu8GemmEpilogue& e) {
  // The epilogue's fields in locals: stores through c (uint8_t) may alias e, and reloading them
  // after every byte kept GCC from vectorising the loops.
  const float qmin = e.qmin, qmax = e.qmax, res_scale = e.res_scale;
  const int32_t zp_y = e.zp_y, res_zp = e.res_zp;
  const uint8_t* const res = e.res;
  const size_t ld_res = e.ld_res;
  for (size_t r = 0; r < mr; ++r) {
    const float* __restrict a = acc + r * nr;
    uint8_t* __restrict y = c + r * ldc;
    // Clamping to the integer bounds first equals rounding then clamping, and keeps the conversion
    // in range (the epilogues' own order).
    if (res) {
      const uint8_t* __restrict rr = res + r * ld_res;
      for (size_t j = 0; j < nc; ++j) {
        const float t = std::fma(static_cast<float>(int32_t{rr[j]} - res_zp), res_scale, a[j]);
        y[j] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(std::min(std::max(t, qmin), qmax))) + zp_y);
      }
    } else {
      for (size_t j = 0; j < nc; ++j)
        y[j] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(std::min(std::max(a[j], qmin), qmax))) + zp_y);
    }
  }
}

}  // namespace
}  // namespace lowbit

// Each ISA file names its own pair (inside its anonymous namespace) and sets them on its kernel sets:
// <family>_group_fma__<isa>, <family>_group_finish__<isa> (qu8 or qsub).
#define LOWBIT_GROUP_EPILOGUE(family, isa)                                                                    \
  void family##_group_fma__##isa(const int32_t* p, const float* s, size_t mr, size_t nr, float* a) {          \
    ::lowbit::qu8_group_fma_impl(p, s, mr, nr, a);                                                            \
  }                                                                                                           \
  void family##_group_finish__##isa(const float* a, size_t mr, size_t nr, size_t nc, uint8_t* c, size_t ldc, \
                                    const ::lowbit::Qu8GemmEpilogue& e) {                                     \
    ::lowbit::qu8_group_finish_impl(a, mr, nr, nc, c, ldc, e);                                                \
  }
