#pragma once
// The fp32 vector traits of the neon kernels (contract: README.md here).
#include <cstddef>
#include <cstdint>
#include <arm_neon.h>

#ifndef LOWBIT_KERNEL_NS
#define LOWBIT_KERNEL_NS lowbit
#endif

namespace LOWBIT_KERNEL_NS::simd {
namespace {

struct NeonF {
  using Vec = float32x4_t;
  using Mask = uint32x4_t;
  static constexpr size_t kLanes = 4;
  static Vec load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, Vec v) { vst1q_f32(p, v); }
  static Vec set1(float f) { return vdupq_n_f32(f); }
  static Vec add(Vec a, Vec b) { return vaddq_f32(a, b); }
  static Vec sub(Vec a, Vec b) { return vsubq_f32(a, b); }
  static Vec mul(Vec a, Vec b) { return vmulq_f32(a, b); }
  static Vec div(Vec a, Vec b) { return vdivq_f32(a, b); }
  static Vec fma(Vec a, Vec b, Vec c) { return vfmaq_f32(c, a, b); }
  static Vec max(Vec c, Vec v) { return vmaxq_f32(c, v); }  // NaN when either is NaN
  static Vec min(Vec c, Vec v) { return vminq_f32(c, v); }
  static Mask gt(Vec a, Vec b) { return vcgtq_f32(a, b); }
  static Mask ge(Vec a, Vec b) { return vcgeq_f32(a, b); }
  static Mask ordered(Vec a) { return vceqq_f32(a, a); }
  static Vec select(Mask m, Vec a, Vec b) { return vbslq_f32(m, a, b); }
  static Vec abs(Vec v) { return vabsq_f32(v); }
  static Vec round(Vec v) { return vrndnq_f32(v); }
  static Vec pow2(Vec n) { return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23)); }
  // e = p[0], p[2], ..., o = p[1], p[3], ... (2 * kLanes floats from p)
  static void deinterleave(const float* p, Vec& e, Vec& o) {
    const float32x4x2_t v = vld2q_f32(p);
    e = v.val[0];
    o = v.val[1];
  }
  // The same of the 2 * kLanes floats a, b (a's first).
  static void deinterleave(Vec a, Vec b, Vec& e, Vec& o) {
    e = vuzp1q_f32(a, b);
    o = vuzp2q_f32(a, b);
  }
  // The first n < kLanes floats (no lane past them read or written).
  static Vec load_n(const float* p, size_t n) {
    float b[4] = {};
    for (size_t i = 0; i < n; ++i) b[i] = p[i];
    return vld1q_f32(b);
  }
  static void store_n(float* p, Vec v, size_t n) {
    float b[4];
    vst1q_f32(b, v);
    for (size_t i = 0; i < n; ++i) p[i] = b[i];
  }
  // No masked load: lane by lane, so the depthwise kernels keep the padded-plane path here.
  static Vec load_lanes(const float* p, uint32_t bits) {
    float b[4] = {};
    for (size_t i = 0; i < 4; ++i)
      if (bits >> i & 1) b[i] = p[i];
    return vld1q_f32(b);
  }
  static constexpr bool kMaskedLoads = false;
};

}  // namespace
}  // namespace LOWBIT_KERNEL_NS::simd
