#pragma once
// The fp32 vector traits of the portable kernels (contract: README.md here).
#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstring>

#ifndef LOWBIT_KERNEL_NS
#define LOWBIT_KERNEL_NS lowbit
#endif

namespace LOWBIT_KERNEL_NS::simd {
namespace {

struct ScalarF {
  using Vec = float;
  using Mask = bool;
  static constexpr size_t kLanes = 1;
  static Vec load(const float* p) { return *p; }
  static void store(float* p, Vec v) { *p = v; }
  static Vec set1(float f) { return f; }
  static Vec add(Vec a, Vec b) { return a + b; }
  static Vec sub(Vec a, Vec b) { return a - b; }
  static Vec mul(Vec a, Vec b) { return a * b; }
  static Vec div(Vec a, Vec b) { return a / b; }
  static Vec fma(Vec a, Vec b, Vec c) { return std::fmaf(a, b, c); }
  static Vec max(Vec c, Vec v) { return c > v ? c : v; }  // v when either is NaN, as maxps
  static Vec min(Vec c, Vec v) { return c < v ? c : v; }
  static Mask gt(Vec a, Vec b) { return a > b; }
  static Mask ge(Vec a, Vec b) { return a >= b; }
  static Mask ordered(Vec a) { return a == a; }
  static Vec select(Mask m, Vec a, Vec b) { return m ? a : b; }
  static Vec abs(Vec v) { return std::fabs(v); }
  static Vec round(Vec v) { return std::nearbyintf(v); }
  static Vec pow2(Vec n) {
    // NaN passes through (the callers select their NaN result by `ordered`): converting it to an
    // integer is undefined in C++, where cvttps2dq gives 0x80000000 (clang's UBSan caught the cast).
    if (n != n) return n;
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  // e = p[0], o = p[1] (2 * kLanes floats from p)
  static void deinterleave(const float* p, Vec& e, Vec& o) {
    e = p[0];
    o = p[1];
  }
  static void deinterleave(Vec a, Vec b, Vec& e, Vec& o) {
    e = a;
    o = b;
  }
  // The first n < kLanes floats: none.
  static Vec load_n(const float*, size_t) { return 0.0f; }
  static void store_n(float*, Vec, size_t) {}
  static Vec load_lanes(const float* p, uint32_t bits) { return bits & 1 ? *p : 0.0f; }
  static constexpr bool kMaskedLoads = false;
};

}  // namespace
}  // namespace LOWBIT_KERNEL_NS::simd
