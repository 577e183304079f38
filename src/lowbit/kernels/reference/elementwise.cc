// Reference element-wise ops: activations, numpy-broadcast arithmetic/comparisons, Where, Cast.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lowbit/kernels/reference/broadcast.h"
#include "lowbit/kernels/reference/reference.h"

namespace lowbit {
namespace {
using ref::fail;
using ref::present;
using In = std::span<const TensorView>;
using Out = std::span<const TensorView>;

// Calls f(T{}) with the C++ type of a byte-addressable numeric dtype (bool reads as uint8_t).
template <class F>
void with_numeric(const Node& n, DType t, F&& f) {
  switch (t) {
    case DType::f32: f(float{}); break;
    case DType::i64: f(int64_t{}); break;
    case DType::i32: f(int32_t{}); break;
    case DType::u8: case DType::boolean: f(uint8_t{}); break;
    case DType::i8: f(int8_t{}); break;
    default: fail(n, std::string("reference kernel does not support dtype ") + dtype_name(t));
  }
}

// ---- unary ----

template <class F>
void map_f32(const Node& n, In in, Out out, F f) {
  if (in[0].dtype != DType::f32) fail(n, "reference kernel expects f32");
  const float* x = in[0].as<float>();
  float* y = out[0].as<float>();
  for (int64_t i = 0, e = in[0].numel(); i < e; ++i) y[i] = f(x[i]);
}

// Same, for any numeric dtype; f is generic over the element type.
template <class F>
void map_numeric(const Node& n, In in, Out out, F f) {
  with_numeric(n, in[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].as<T>();
    T* y = out[0].as<T>();
    for (int64_t i = 0, e = in[0].numel(); i < e; ++i) y[i] = static_cast<T>(f(x[i]));
  });
}

float sigmoid_f(float v) { return 1.0f / (1.0f + std::exp(-v)); }

void relu(const Graph&, const Node& n, In in, Out out) {
  map_numeric(n, in, out, [](auto v) { return v > 0 ? v : decltype(v){0}; });
}
void neg(const Graph&, const Node& n, In in, Out out) { map_numeric(n, in, out, [](auto v) { return -v; }); }
void abs_op(const Graph&, const Node& n, In in, Out out) {
  map_numeric(n, in, out, [](auto v) { return v < 0 ? -v : v; });
}
void sign(const Graph&, const Node& n, In in, Out out) {
  map_numeric(n, in, out, [](auto v) { return v > 0 ? 1 : v < 0 ? -1 : 0; });
}
void leaky_relu(const Graph&, const Node& n, In in, Out out) {
  const float alpha = n.attrs.get_float("alpha", 0.01f);
  map_f32(n, in, out, [=](float v) { return v >= 0 ? v : alpha * v; });
}
void elu(const Graph&, const Node& n, In in, Out out) {
  const float alpha = n.attrs.get_float("alpha", 1.0f);
  map_f32(n, in, out, [=](float v) { return v >= 0 ? v : alpha * (std::exp(v) - 1.0f); });
}
void sigmoid(const Graph&, const Node& n, In in, Out out) { map_f32(n, in, out, sigmoid_f); }
// lowbit's SiLU (Swish): x * Sigmoid(x), as the Mul it replaces computes it.
void silu(const Graph&, const Node& n, In in, Out out) {
  map_f32(n, in, out, [](float v) { return v * sigmoid_f(v); });
}
void hard_sigmoid(const Graph&, const Node& n, In in, Out out) {
  const float alpha = n.attrs.get_float("alpha", 0.2f), beta = n.attrs.get_float("beta", 0.5f);
  map_f32(n, in, out, [=](float v) { return std::clamp(alpha * v + beta, 0.0f, 1.0f); });
}
void hard_swish(const Graph&, const Node& n, In in, Out out) {
  map_f32(n, in, out, [](float v) { return v * std::clamp(v / 6.0f + 0.5f, 0.0f, 1.0f); });
}
void tanh_op(const Graph&, const Node& n, In in, Out out) { map_f32(n, in, out, [](float v) { return std::tanh(v); }); }
void exp_op(const Graph&, const Node& n, In in, Out out) { map_f32(n, in, out, [](float v) { return std::exp(v); }); }
void log_op(const Graph&, const Node& n, In in, Out out) { map_f32(n, in, out, [](float v) { return std::log(v); }); }
void sqrt_op(const Graph&, const Node& n, In in, Out out) { map_f32(n, in, out, [](float v) { return std::sqrt(v); }); }
void erf_op(const Graph&, const Node& n, In in, Out out) { map_f32(n, in, out, [](float v) { return std::erf(v); }); }
void floor_op(const Graph&, const Node& n, In in, Out out) {
  map_f32(n, in, out, [](float v) { return std::floor(v); });
}
void ceil_op(const Graph&, const Node& n, In in, Out out) { map_f32(n, in, out, [](float v) { return std::ceil(v); }); }
// Round half to even, as ONNX specifies (the default floating-point rounding mode).
void round_op(const Graph&, const Node& n, In in, Out out) {
  map_f32(n, in, out, [](float v) { return std::nearbyint(v); });
}
void reciprocal(const Graph&, const Node& n, In in, Out out) {
  map_f32(n, in, out, [](float v) { return 1.0f / v; });
}
void softplus(const Graph&, const Node& n, In in, Out out) {
  map_f32(n, in, out, [](float v) { return std::log1p(std::exp(v)); });
}

template <class T>
void clip_t(In in, Out out) {
  T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
  if (present(in, 1)) lo = in[1].as<T>()[0];
  if (present(in, 2)) hi = in[2].as<T>()[0];
  const T* x = in[0].as<T>();
  T* y = out[0].as<T>();
  // min(max(x, lo), hi): when lo > hi every element becomes hi, as in the ONNX reference.
  for (int64_t i = 0, e = in[0].numel(); i < e; ++i) y[i] = std::min(std::max(x[i], lo), hi);
}

void clip(const Graph&, const Node& n, In in, Out out) {
  for (size_t i = 1; i < 3; ++i)
    if (present(in, i) && in[i].dtype != in[0].dtype) fail(n, "min/max must have the input's dtype");
  with_numeric(n, in[0].dtype, [&](auto tag) { clip_t<decltype(tag)>(in, out); });
}

void identity(const Graph&, const Node& n, In in, Out out) {
  if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, static_cast<size_t>(in[0].nbytes()));
}

void dropout(const Graph& g, const Node& n, In in, Out out) {
  identity(g, n, in, out);
  if (out.size() > 1 && out[1].data) std::memset(out[1].data, 1, static_cast<size_t>(out[1].nbytes()));
}

// ---- binary / variadic with broadcasting ----

// y = op(a, b) with numpy broadcasting; y may alias a when a already has the output's shape.
template <class T, class R, class Op>
void broadcast_binary(const TensorView& a, const TensorView& b, const TensorView& y, Op op) {
  const T* ap = a.as<T>();
  const T* bp = b.as<T>();
  R* yp = y.as<R>();
  ref::for_each_broadcast<2>(y.shape, {a.shape, b.shape}, [&](int64_t o, const std::array<int64_t, 2>& off) {
    yp[o] = static_cast<R>(op(ap[off[0]], bp[off[1]]));
  });
}

enum class Arith { add, sub, mul, div, min, max, mod };

template <Arith K>
void arith(const Graph&, const Node& n, In in, Out out) {
  for (const TensorView& v : in)
    if (v.dtype != out[0].dtype) fail(n, "all inputs must have the output's dtype");
  const bool fmod_attr = n.attrs.get_int("fmod", 0) != 0;
  with_numeric(n, out[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    auto op = [&](T a, T b) -> T {
      if constexpr (K == Arith::add) return static_cast<T>(a + b);
      if constexpr (K == Arith::sub) return static_cast<T>(a - b);
      if constexpr (K == Arith::mul) return static_cast<T>(a * b);
      if constexpr (K == Arith::min) return std::min(a, b);
      if constexpr (K == Arith::max) return std::max(a, b);
      if constexpr (K == Arith::div) {
        if constexpr (std::is_integral_v<T>) {
          if (b == 0) fail(n, "integer division by zero");
        }
        return static_cast<T>(a / b);  // integers truncate toward zero, like C++
      }
      if constexpr (K == Arith::mod) {
        if constexpr (std::is_integral_v<T>) {
          if (b == 0) fail(n, "integer modulo by zero");
          T r = static_cast<T>(a % b);
          if (!fmod_attr && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);  // sign of divisor
          return r;
        } else {
          float r = std::fmod(a, b);
          if (!fmod_attr && r != 0 && ((r < 0) != (b < 0))) r += b;
          return r;
        }
      }
    };
    if (in.size() == 1) {
      std::memcpy(out[0].data, in[0].data, static_cast<size_t>(out[0].nbytes()));
      return;
    }
    // Variadic Min/Max fold pairwise into the output buffer (same shape, so aliasing is safe).
    broadcast_binary<T, T>(in[0], in[1], out[0], op);
    for (size_t k = 2; k < in.size(); ++k) broadcast_binary<T, T>(out[0], in[k], out[0], op);
  });
}

// Sum / Mean over any number of inputs.
template <bool kMean>
void sum_op(const Graph& g, const Node& n, In in, Out out) {
  arith<Arith::add>(g, n, in, out);
  if constexpr (kMean) {
    if (out[0].dtype != DType::f32) fail(n, "Mean expects f32");
    float* y = out[0].as<float>();
    for (int64_t i = 0, e = out[0].numel(); i < e; ++i) y[i] /= static_cast<float>(in.size());
  }
}

// Pow: the exponent may have a different dtype from the base; the result has the base's dtype.
void pow_op(const Graph&, const Node& n, In in, Out out) {
  with_numeric(n, in[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* ap = in[0].as<T>();
    T* yp = out[0].as<T>();
    ref::for_each_broadcast<2>(out[0].shape, {in[0].shape, in[1].shape},
                               [&](int64_t o, const std::array<int64_t, 2>& off) {
                                 const double e = ref::view_double(in[1], off[1]);
                                 if constexpr (std::is_same_v<T, float>) yp[o] = std::pow(ap[off[0]], static_cast<float>(e));
                                 else yp[o] = static_cast<T>(std::pow(static_cast<double>(ap[off[0]]), e));
                               });
  });
}

enum class Cmp { eq, lt, gt, le, ge };

template <Cmp K>
void compare(const Graph&, const Node& n, In in, Out out) {
  if (in[0].dtype != in[1].dtype) fail(n, "inputs must have the same dtype");
  with_numeric(n, in[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    broadcast_binary<T, uint8_t>(in[0], in[1], out[0], [](T a, T b) {
      if constexpr (K == Cmp::eq) return a == b;
      if constexpr (K == Cmp::lt) return a < b;
      if constexpr (K == Cmp::gt) return a > b;
      if constexpr (K == Cmp::le) return a <= b;
      if constexpr (K == Cmp::ge) return a >= b;
    });
  });
}

enum class Logic { and_, or_, xor_ };

template <Logic K>
void logical(const Graph&, const Node& n, In in, Out out) {
  broadcast_binary<uint8_t, uint8_t>(in[0], in[1], out[0], [](uint8_t a, uint8_t b) {
    if constexpr (K == Logic::and_) return a && b;
    if constexpr (K == Logic::or_) return a || b;
    if constexpr (K == Logic::xor_) return (a != 0) != (b != 0);
  });
}

void not_op(const Graph&, const Node& n, In in, Out out) {
  const uint8_t* x = in[0].as<uint8_t>();
  uint8_t* y = out[0].as<uint8_t>();
  for (int64_t i = 0, e = in[0].numel(); i < e; ++i) y[i] = !x[i];
}

void where(const Graph&, const Node& n, In in, Out out) {
  const size_t es = ref::elem_bytes(n, out[0].dtype);
  const uint8_t* c = in[0].as<uint8_t>();
  ref::with_uint_of_size(es, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = in[1].as<T>();
    const T* yp = in[2].as<T>();
    T* op = out[0].as<T>();
    ref::for_each_broadcast<3>(out[0].shape, {in[0].shape, in[1].shape, in[2].shape},
                               [&](int64_t o, const std::array<int64_t, 3>& off) {
                                 op[o] = c[off[0]] ? xp[off[1]] : yp[off[2]];
                               });
  });
}

// ---- Cast ----

template <class D, class S>
D convert(S v) {
  if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    // C static_cast semantics (truncation toward zero); out-of-range values saturate and NaN
    // becomes 0 instead of being undefined behaviour.
    if (std::isnan(v)) return D{0};
    const double t = std::trunc(static_cast<double>(v));
    if (t <= static_cast<double>(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
    if (t >= static_cast<double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(t);
  } else {
    return static_cast<D>(v);
  }
}

void cast(const Graph&, const Node& n, In in, Out out) {
  const DType dst = out[0].dtype;
  const int64_t e = in[0].numel();
  with_numeric(n, in[0].dtype, [&](auto stag) {
    using S = decltype(stag);
    const S* x = in[0].as<S>();
    if (dst == DType::boolean) {
      uint8_t* y = out[0].as<uint8_t>();
      for (int64_t i = 0; i < e; ++i) y[i] = x[i] != S{0};
      return;
    }
    with_numeric(n, dst, [&](auto dtag) {
      using D = decltype(dtag);
      D* y = out[0].as<D>();
      for (int64_t i = 0; i < e; ++i) y[i] = convert<D>(x[i]);
    });
  });
}

ReferenceRegistrar reg_relu("Relu", relu);
ReferenceRegistrar reg_neg("Neg", neg);
ReferenceRegistrar reg_abs("Abs", abs_op);
ReferenceRegistrar reg_sign("Sign", sign);
ReferenceRegistrar reg_leaky_relu("LeakyRelu", leaky_relu);
ReferenceRegistrar reg_elu("Elu", elu);
ReferenceRegistrar reg_sigmoid("Sigmoid", sigmoid);
ReferenceRegistrar reg_silu("SiLU", silu);
ReferenceRegistrar reg_hard_sigmoid("HardSigmoid", hard_sigmoid);
ReferenceRegistrar reg_hard_swish("HardSwish", hard_swish);
ReferenceRegistrar reg_tanh("Tanh", tanh_op);
ReferenceRegistrar reg_exp("Exp", exp_op);
ReferenceRegistrar reg_log("Log", log_op);
ReferenceRegistrar reg_sqrt("Sqrt", sqrt_op);
ReferenceRegistrar reg_erf("Erf", erf_op);
ReferenceRegistrar reg_floor("Floor", floor_op);
ReferenceRegistrar reg_ceil("Ceil", ceil_op);
ReferenceRegistrar reg_round("Round", round_op);
ReferenceRegistrar reg_reciprocal("Reciprocal", reciprocal);
ReferenceRegistrar reg_softplus("Softplus", softplus);
ReferenceRegistrar reg_clip("Clip", clip);
ReferenceRegistrar reg_identity("Identity", identity);
ReferenceRegistrar reg_dropout("Dropout", dropout);
ReferenceRegistrar reg_add("Add", arith<Arith::add>);
ReferenceRegistrar reg_sub("Sub", arith<Arith::sub>);
ReferenceRegistrar reg_mul("Mul", arith<Arith::mul>);
ReferenceRegistrar reg_div("Div", arith<Arith::div>);
ReferenceRegistrar reg_mod("Mod", arith<Arith::mod>);
ReferenceRegistrar reg_min("Min", arith<Arith::min>);
ReferenceRegistrar reg_max("Max", arith<Arith::max>);
ReferenceRegistrar reg_sum("Sum", sum_op<false>);
ReferenceRegistrar reg_mean("Mean", sum_op<true>);
ReferenceRegistrar reg_pow("Pow", pow_op);
ReferenceRegistrar reg_equal("Equal", compare<Cmp::eq>);
ReferenceRegistrar reg_less("Less", compare<Cmp::lt>);
ReferenceRegistrar reg_greater("Greater", compare<Cmp::gt>);
ReferenceRegistrar reg_less_equal("LessOrEqual", compare<Cmp::le>);
ReferenceRegistrar reg_greater_equal("GreaterOrEqual", compare<Cmp::ge>);
ReferenceRegistrar reg_and("And", logical<Logic::and_>);
ReferenceRegistrar reg_or("Or", logical<Logic::or_>);
ReferenceRegistrar reg_xor("Xor", logical<Logic::xor_>);
ReferenceRegistrar reg_not("Not", not_op);
ReferenceRegistrar reg_where("Where", where);
ReferenceRegistrar reg_cast("Cast", cast);
ReferenceRegistrar reg_cast_like("CastLike", cast);

}  // namespace
}  // namespace lowbit
