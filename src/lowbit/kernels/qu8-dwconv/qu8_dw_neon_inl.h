#pragma once
// AArch64 pieces of the qu8 depthwise family (qu8_dwconv_inl.h): 16 outputs as four int32x4,
// requantized by the GEMM kernels' NEON epilogue. Each ISA file compiles its own copy.
#include <arm_neon.h>

#include "lowbit/kernels/qu8-dwconv/qu8_dwconv_inl.h"
#include "lowbit/kernels/qu8-gemm/qu8_neon_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

struct NeonDwBase {
  using Wv = int32x4_t;
  struct Acc {
    int32x4_t v[4];
  };
  struct Requant {
    ::lowbit::Qu8GemmEpilogue e;
    explicit Requant(const ::lowbit::Qu8GemmEpilogue& ep) : e(ep) {}
  };
  static Wv bcast(int32_t w) { return vdupq_n_s32(w); }
  static Acc init(int32_t i) { return {{vdupq_n_s32(i), vdupq_n_s32(i), vdupq_n_s32(i), vdupq_n_s32(i)}}; }
  static void store(const Acc& acc, Requant& rq, const uint8_t* res, uint8_t* out) {
    rq.e.res = res;
    ::lowbit::qu8_requant_store_row_neon<16>(acc.v, 16, 0, out, rq.e);
  }
};

}  // namespace
}  // namespace LOWBIT_KERNEL_NS
