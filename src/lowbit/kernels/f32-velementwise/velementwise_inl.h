#pragma once
// The element-wise algorithms, written once over an ISA traits type V (included by the ISA files
// only, after their intrinsics header):
//   V::Vec, V::Mask, V::kLanes          a vector of floats, a lane mask, lanes per vector
//   load(p) / store(p, v)               unaligned
//   set1(f), add, sub, mul, div, fma(a, b, c) = a * b + c rounded once
//   max(c, v) / min(c, v)               NaN in v comes out (x86 maxps order: the second operand)
//   gt(a, b), ge(a, b), ordered(a)      masks; ordered: not NaN
//   select(m, a, b)                     m ? a : b per lane
//   abs(v), round(v)                    round: to nearest even
//   pow2(n)                             2^n for integral n in [-126, 127]
// Only IEEE operations with a fixed rounding sequence are used (every a * b + c is an explicit
// fma), so every ISA's set, the portable one included, gives the same bits.
#include <cstddef>
#include <cstring>

#include "lowbit/kernels/f32-velementwise/velementwise.h"

namespace LOWBIT_KERNEL_NS {
namespace velementwise {
namespace {

using ::lowbit::VUnaryParams;

// sigmoid(x) = 1 / (1 + e) and SiLU(x) = x / (1 + e), e = e^t with t = -x clamped to
// [-87.33654, 89]: one division each, and no 1 - s cancellation (for x < 0, e > 1 and the division
// is as accurate as e is). e^t: t = n ln2 + r with n = round(t log2 e) and |r| <= ln2 / 2 (ln2 in
// two parts, Cody-Waite), e^r by Cephes' degree-7 expf polynomial, 2^n from the exponent bits.
// At t = -87.33654, 2^n is FLT_MIN (n = -126): e^t under that adds nothing to 1. From t = 88.38
// (n = 128) 2^n is +inf, so e = inf: sigmoid(x) = 0 and SiLU(x) = -0 for x <= -88.38, within
// 4e-39 and 4e-37 of the truth, and SiLU(-inf) = -inf / inf = NaN, as x * Sigmoid(x) gives.
// SiLU's NaN comes from x itself in the division; Sigmoid selects it. Measured error: README.md.
//
// The earlier form, e = e^-|x| with 1 / (1 + e) or e / (1 + e) by sign and SiLU as x * sigmoid(x),
// took 28 vector operations and a division; this one 20 and the division. EfficientNet-B0's 49
// SiLUs had cost 3.1 of its 12.7 fp32 ms (Xeon, 1 thread, against Relu in their place).
template <class V, bool kSilu>
inline typename V::Vec sigmoid_or_silu(typename V::Vec x) {
  using Vec = typename V::Vec;
  const Vec t = V::sub(V::set1(0.0f), V::min(V::set1(87.33654f), V::max(V::set1(-89.0f), x)));
  const Vec n = V::round(V::mul(t, V::set1(1.44269504088896341f)));
  Vec r = V::fma(n, V::set1(-0.693359375f), t);
  r = V::fma(n, V::set1(2.12194440e-4f), r);
  Vec p = V::set1(1.9875691500e-4f);
  p = V::fma(p, r, V::set1(1.3981999507e-3f));
  p = V::fma(p, r, V::set1(8.3334519073e-3f));
  p = V::fma(p, r, V::set1(4.1665795894e-2f));
  p = V::fma(p, r, V::set1(1.6666665459e-1f));
  p = V::fma(p, r, V::set1(5.0000001201e-1f));
  p = V::fma(p, V::mul(r, r), r);
  p = V::add(p, V::set1(1.0f));
  const Vec d = V::add(V::set1(1.0f), V::mul(p, V::pow2(n)));
  if constexpr (kSilu) {
    return V::div(x, d);
  } else {
    return V::select(V::ordered(x), V::div(V::set1(1.0f), d), x);
  }
}

template <class V, ::lowbit::VUnary kOp>
inline typename V::Vec unary1(typename V::Vec x, const VUnaryParams& p) {
  using ::lowbit::VUnary;
  const typename V::Vec zero = V::set1(0.0f);
  if constexpr (kOp == VUnary::relu) return V::select(V::gt(x, zero), x, zero);  // NaN -> 0, as the reference
  if constexpr (kOp == VUnary::clamp) return V::min(V::set1(p.hi), V::max(V::set1(p.lo), x));
  if constexpr (kOp == VUnary::leaky_relu) return V::select(V::ge(x, zero), x, V::mul(V::set1(p.alpha), x));
  if constexpr (kOp == VUnary::hard_sigmoid)
    return V::min(V::set1(1.0f), V::max(zero, V::fma(V::set1(p.alpha), x, V::set1(p.beta))));
  // x * clamp(x / 6 + 1/2, 0, 1): the division as the reference writes it (bit-identical to it).
  if constexpr (kOp == VUnary::hard_swish)
    return V::mul(x, V::min(V::set1(1.0f), V::max(zero, V::add(V::div(x, V::set1(6.0f)), V::set1(0.5f)))));
  if constexpr (kOp == VUnary::sigmoid) return sigmoid_or_silu<V, false>(x);
  if constexpr (kOp == VUnary::silu) return sigmoid_or_silu<V, true>(x);
}

// Whole vectors, then the tail through a vector-sized buffer (no lane past n is read or written).
template <class V, ::lowbit::VUnary kOp>
void unary(size_t n, const float* x, float* y, const VUnaryParams& p) {
  constexpr size_t L = V::kLanes;
  size_t i = 0;
  for (; i + L <= n; i += L) V::store(y + i, unary1<V, kOp>(V::load(x + i), p));
  if (i < n) {
    float buf[L] = {};
    std::memcpy(buf, x + i, (n - i) * sizeof(float));
    V::store(buf, unary1<V, kOp>(V::load(buf), p));
    std::memcpy(y + i, buf, (n - i) * sizeof(float));
  }
}

template <class V, ::lowbit::VBinary kOp>
inline typename V::Vec binary1(typename V::Vec a, typename V::Vec b) {
  using ::lowbit::VBinary;
  if constexpr (kOp == VBinary::add) return V::add(a, b);
  if constexpr (kOp == VBinary::sub) return V::sub(a, b);
  if constexpr (kOp == VBinary::mul) return V::mul(a, b);
  if constexpr (kOp == VBinary::div) return V::div(a, b);
}

// kA / kB: that side is a vector (else its one value broadcast).
template <class V, ::lowbit::VBinary kOp, bool kA, bool kB>
void binary(size_t n, const float* a, const float* b, float* y) {
  constexpr size_t L = V::kLanes;
  const typename V::Vec a0 = V::set1(a[0]), b0 = V::set1(b[0]);
  size_t i = 0;
  for (; i + L <= n; i += L)
    V::store(y + i, binary1<V, kOp>(kA ? V::load(a + i) : a0, kB ? V::load(b + i) : b0));
  if (i < n) {
    float ba[L] = {}, bb[L] = {};
    if constexpr (kA) std::memcpy(ba, a + i, (n - i) * sizeof(float));
    if constexpr (kB) std::memcpy(bb, b + i, (n - i) * sizeof(float));
    V::store(ba, binary1<V, kOp>(kA ? V::load(ba) : a0, kB ? V::load(bb) : b0));
    std::memcpy(y + i, ba, (n - i) * sizeof(float));
  }
}

template <class V>
inline typename V::Vec affine1(typename V::Vec x, typename V::Vec s, typename V::Vec b, typename V::Vec lo,
                               typename V::Vec hi) {
  return V::min(hi, V::max(lo, V::fma(x, s, b)));
}

template <class V>
void affine(size_t n, const float* x, float* y, float scale, float shift, float lo, float hi) {
  constexpr size_t L = V::kLanes;
  const typename V::Vec s = V::set1(scale), b = V::set1(shift), l = V::set1(lo), h = V::set1(hi);
  size_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {  // two vectors a step: the loads of one overlap the other's math
    const typename V::Vec x0 = V::load(x + i), x1 = V::load(x + i + L);
    V::store(y + i, affine1<V>(x0, s, b, l, h));
    V::store(y + i + L, affine1<V>(x1, s, b, l, h));
  }
  for (; i + L <= n; i += L) V::store(y + i, affine1<V>(V::load(x + i), s, b, l, h));
  if (i < n) {
    float buf[L] = {};
    std::memcpy(buf, x + i, (n - i) * sizeof(float));
    V::store(buf, affine1<V>(V::load(buf), s, b, l, h));
    std::memcpy(y + i, buf, (n - i) * sizeof(float));
  }
}

}  // namespace
}  // namespace velementwise
}  // namespace LOWBIT_KERNEL_NS

// Each ISA file's named kernels and its set, from its traits type V: f32_vsigmoid__avx2,
// f32_vmul__avx2<kA, kB>, ... (`inspect --kernels` finds the micro-kernels by these names).
#define LOWBIT_VUNARY_FN(ISA, V, OP)                                                                 \
  void f32_v##OP##__##ISA(size_t n, const float* x, float* y, const ::lowbit::VUnaryParams& p) {      \
    ::LOWBIT_KERNEL_NS::velementwise::unary<V, ::lowbit::VUnary::OP>(n, x, y, p);                     \
  }
#define LOWBIT_VBINARY_FN(ISA, V, OP)                                                                \
  template <bool kA, bool kB>                                                                        \
  void f32_v##OP##__##ISA(size_t n, const float* a, const float* b, float* y) {                      \
    ::LOWBIT_KERNEL_NS::velementwise::binary<V, ::lowbit::VBinary::OP, kA, kB>(n, a, b, y);           \
  }
#define LOWBIT_VBINARY_SET(k, ISA, OP)                                                               \
  k.vv[static_cast<int>(::lowbit::VBinary::OP)] = &f32_v##OP##__##ISA<true, true>;                   \
  k.vs[static_cast<int>(::lowbit::VBinary::OP)] = &f32_v##OP##__##ISA<true, false>;                  \
  k.sv[static_cast<int>(::lowbit::VBinary::OP)] = &f32_v##OP##__##ISA<false, true>;
#define LOWBIT_VELEMENTWISE_KERNELS(ISA, V)                                                          \
  LOWBIT_VUNARY_FN(ISA, V, relu)                                                                     \
  LOWBIT_VUNARY_FN(ISA, V, clamp)                                                                    \
  LOWBIT_VUNARY_FN(ISA, V, leaky_relu)                                                               \
  LOWBIT_VUNARY_FN(ISA, V, hard_sigmoid)                                                             \
  LOWBIT_VUNARY_FN(ISA, V, hard_swish)                                                               \
  LOWBIT_VUNARY_FN(ISA, V, sigmoid)                                                                  \
  LOWBIT_VUNARY_FN(ISA, V, silu)                                                                     \
  LOWBIT_VBINARY_FN(ISA, V, add)                                                                     \
  LOWBIT_VBINARY_FN(ISA, V, sub)                                                                     \
  LOWBIT_VBINARY_FN(ISA, V, mul)                                                                     \
  LOWBIT_VBINARY_FN(ISA, V, div)                                                                     \
  void f32_vaffine__##ISA(size_t n, const float* x, float* y, float s, float b, float lo, float hi) {   \
    ::LOWBIT_KERNEL_NS::velementwise::affine<V>(n, x, y, s, b, lo, hi);                                \
  }                                                                                                  \
  constexpr ::lowbit::F32VElementwiseKernels make_##ISA(uint32_t features) {                         \
    ::lowbit::F32VElementwiseKernels k;                                                              \
    k.isa = #ISA;                                                                                    \
    k.features = features;                                                                           \
    k.unary[static_cast<int>(::lowbit::VUnary::relu)] = &f32_vrelu__##ISA;                           \
    k.unary[static_cast<int>(::lowbit::VUnary::clamp)] = &f32_vclamp__##ISA;                         \
    k.unary[static_cast<int>(::lowbit::VUnary::leaky_relu)] = &f32_vleaky_relu__##ISA;               \
    k.unary[static_cast<int>(::lowbit::VUnary::hard_sigmoid)] = &f32_vhard_sigmoid__##ISA;           \
    k.unary[static_cast<int>(::lowbit::VUnary::hard_swish)] = &f32_vhard_swish__##ISA;               \
    k.unary[static_cast<int>(::lowbit::VUnary::sigmoid)] = &f32_vsigmoid__##ISA;                     \
    k.unary[static_cast<int>(::lowbit::VUnary::silu)] = &f32_vsilu__##ISA;                           \
    LOWBIT_VBINARY_SET(k, ISA, add)                                                                  \
    LOWBIT_VBINARY_SET(k, ISA, sub)                                                                  \
    LOWBIT_VBINARY_SET(k, ISA, mul)                                                                  \
    LOWBIT_VBINARY_SET(k, ISA, div)                                                                  \
    k.affine = &f32_vaffine__##ISA;                                                                  \
    return k;                                                                                        \
  }
