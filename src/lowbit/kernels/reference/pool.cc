// Reference pooling, reductions, Softmax, Resize and Pad.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/reference/broadcast.h"
#include "lowbit/ir/codes.h"
#include "lowbit/kernels/reference/reference.h"

namespace lowbit {
namespace {
using ref::fail;
using ref::present;

// Pool geometry normalised to three spatial axes (leading unit axes for 1-D / 2-D pooling).
struct PoolGeom {
  int64_t N = 1, C = 1;
  int64_t I[3] = {1, 1, 1}, K[3] = {1, 1, 1}, O[3] = {1, 1, 1}, S[3] = {1, 1, 1}, D[3] = {1, 1, 1};
  int64_t P[3] = {0, 0, 0}, PE[3] = {0, 0, 0};  // pads at begin / end
  bool count_include_pad = false;
};

PoolGeom pool_geom(const Graph& g, const Node& n, const TensorView& x, const TensorView& y) {
  PoolGeom r;
  const int64_t sr = static_cast<int64_t>(x.shape.size()) - 2;
  if (sr < 1 || sr > 3) fail(n, "reference pooling supports 1-3 spatial dims");
  r.N = x.shape[0];
  r.C = x.shape[1];
  if (sr == 2) {  // share the resolved geometry with every other consumer of 2-D pooling
    const Pool2dParams p = pool2d_params(g, n);
    const int64_t v[][6] = {{p.H, p.KH, p.SH, p.DH, p.pad_top, p.pad_bottom}, {p.W, p.KW, p.SW, p.DW, p.pad_left, p.pad_right}};
    for (int i = 0; i < 2; ++i) {
      r.I[1 + i] = v[i][0], r.K[1 + i] = v[i][1], r.S[1 + i] = v[i][2], r.D[1 + i] = v[i][3];
      r.P[1 + i] = v[i][4], r.PE[1 + i] = v[i][5];
    }
    r.count_include_pad = p.count_include_pad;
  } else {
    const auto& a = n.attrs;
    const auto ks = a.get_ints("kernel_shape");
    if (static_cast<int64_t>(ks.size()) != sr) fail(n, "kernel_shape must have one entry per spatial axis");
    const auto st = a.get_ints("strides", std::vector<int64_t>(sr, 1));
    const auto dl = a.get_ints("dilations", std::vector<int64_t>(sr, 1));
    const auto pd = a.get_ints("pads", std::vector<int64_t>(2 * sr, 0));
    const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
    const bool ceil_mode = a.get_int("ceil_mode", 0) != 0;
    for (int64_t i = 0; i < sr; ++i) {
      const size_t si = static_cast<size_t>(i);
      const int64_t j = 3 - sr + i;
      AxisGeometry ag = resolve_axis(auto_pad, x.shape[2 + si], ks[si], st.at(si), dl.at(si), pd.at(si),
                                     pd.at(si + static_cast<size_t>(sr)), ceil_mode);
      r.I[j] = x.shape[2 + si], r.K[j] = ks[si], r.S[j] = st.at(si), r.D[j] = dl.at(si);
      r.P[j] = ag.pad_begin, r.PE[j] = ag.pad_end;
    }
    r.count_include_pad = a.get_int("count_include_pad", 0) != 0;
  }
  for (int64_t i = 0; i < sr; ++i) r.O[3 - sr + i] = y.shape[2 + static_cast<size_t>(i)];
  return r;
}

// Window taps of one axis at output position o: input indices start + k*D for k in [0, K).
struct AxisWindow {
  int64_t start, k0, k1;  // taps k in [k0, k1) fall inside the input
  int64_t padded;         // taps inside the padded extent [-P, I + PE) (count_include_pad divisor)
};

AxisWindow axis_window(const PoolGeom& p, int a, int64_t o) {
  AxisWindow w;
  w.start = o * p.S[a] - p.P[a];
  w.k0 = 0, w.k1 = 0, w.padded = 0;
  bool first = true;
  for (int64_t k = 0; k < p.K[a]; ++k) {
    const int64_t i = w.start + k * p.D[a];
    if (i >= -p.P[a] && i < p.I[a] + p.PE[a]) ++w.padded;
    if (i >= 0 && i < p.I[a]) {
      if (first) w.k0 = k, first = false;
      w.k1 = k + 1;
    }
  }
  return w;
}

template <class T>
void max_pool_t(const PoolGeom& p, const TensorView& x, const TensorView& y, const TensorView* idx, bool col_major) {
  const T* xp = x.as<T>();
  T* yp = y.as<T>();
  int64_t* ip = idx ? idx->as<int64_t>() : nullptr;
  const int64_t isz = p.I[0] * p.I[1] * p.I[2], osz = p.O[0] * p.O[1] * p.O[2];
  for (int64_t plane = 0; plane < p.N * p.C; ++plane) {
    const T* xs = xp + plane * isz;
    for (int64_t od = 0; od < p.O[0]; ++od) {
      const AxisWindow wd = axis_window(p, 0, od);
      for (int64_t oh = 0; oh < p.O[1]; ++oh) {
        const AxisWindow wh = axis_window(p, 1, oh);
        for (int64_t ow = 0; ow < p.O[2]; ++ow) {
          const AxisWindow ww = axis_window(p, 2, ow);
          T best = std::numeric_limits<T>::lowest();
          if constexpr (std::numeric_limits<T>::has_infinity) best = -std::numeric_limits<T>::infinity();
          // NaN never wins `v > best` (fast kernels rely on this); the index defaults to the first tap.
          int64_t bd = wd.start + wd.k0 * p.D[0], bh = wh.start + wh.k0 * p.D[1], bw = ww.start + ww.k0 * p.D[2];
          for (int64_t kd = wd.k0; kd < wd.k1; ++kd) {
            const int64_t id = wd.start + kd * p.D[0];
            for (int64_t kh = wh.k0; kh < wh.k1; ++kh) {
              const int64_t ih = wh.start + kh * p.D[1];
              const T* row = xs + (id * p.I[1] + ih) * p.I[2];
              for (int64_t kw = ww.k0; kw < ww.k1; ++kw) {
                const int64_t iw = ww.start + kw * p.D[2];
                if (row[iw] > best) best = row[iw], bd = id, bh = ih, bw = iw;
              }
            }
          }
          const int64_t o = plane * osz + (od * p.O[1] + oh) * p.O[2] + ow;
          yp[o] = best;
          if (ip) {
            // Flat index into the whole input tensor, row- or column-major over the spatial axes.
            const int64_t sp = col_major ? (bw * p.I[1] + bh) * p.I[0] + bd : (bd * p.I[1] + bh) * p.I[2] + bw;
            ip[o] = plane * isz + sp;
          }
        }
      }
    }
  }
}

void max_pool(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  const PoolGeom p = pool_geom(g, n, in[0], out[0]);
  const TensorView* idx = out.size() > 1 && out[1].data ? &out[1] : nullptr;
  const bool col_major = n.attrs.get_int("storage_order", 0) != 0;
  switch (in[0].dtype) {
    case DType::f32: max_pool_t<float>(p, in[0], out[0], idx, col_major); break;
    case DType::u8: max_pool_t<uint8_t>(p, in[0], out[0], idx, col_major); break;
    case DType::i8: max_pool_t<int8_t>(p, in[0], out[0], idx, col_major); break;
    case DType::i32: max_pool_t<int32_t>(p, in[0], out[0], idx, col_major); break;
    case DType::b1: {  // packed signs (ir/codes.h): unpacked to +-1, pooled as int8, packed again
      const Shape &xs = in[0].shape, &ys = out[0].shape;
      std::vector<int8_t> xi(static_cast<size_t>(num_elements(xs))), yi(static_cast<size_t>(num_elements(ys)));
      size_t i = 0;
      for (int64_t b = 0; b < xs[0]; ++b)
        for (int64_t c = 0; c < xs[1]; ++c)
          for (int64_t h = 0; h < xs[2]; ++h)
            for (int64_t w = 0; w < xs[3]; ++w)
              xi[i++] = static_cast<int8_t>(load_packed_sign(in[0].data, xs[1], xs[2], xs[3], b, c, h, w));
      max_pool_t<int8_t>(p, TensorView{xi.data(), DType::i8, xs}, TensorView{yi.data(), DType::i8, ys}, nullptr, false);
      i = 0;
      for (int64_t b = 0; b < ys[0]; ++b)
        for (int64_t c = 0; c < ys[1]; ++c)
          for (int64_t h = 0; h < ys[2]; ++h)
            for (int64_t w = 0; w < ys[3]; ++w) store_packed_sign(out[0].data, ys[1], ys[2], ys[3], b, c, h, w, yi[i++]);
      break;
    }
    default: fail(n, std::string("reference MaxPool does not support ") + dtype_name(in[0].dtype));
  }
}

// AveragePool over the taps inside the input, divided by the count: the taps inside the declared
// pads with count_include_pad, else those inside (ceil_mode overhang never counts).
// f32: the mean in double. u8 keeps the input's quantization (scale s, zero point zp;
// notes/quant_ir.md): the mean of the window's real values, s * (mean of codes - zp), is the code
// mean; a counted padded tap is real 0, code zp. q = int(nearbyintf(float(sum of codes) /
// float(count))), clamped to [0, 255], zp for an empty count (the sum is an exact integer in
// float below 2^24: the fast kernels match byte for byte).
template <class T>
void average_pool_t(const PoolGeom& p, const TensorView& x, const TensorView& y, int64_t zp) {
  using Sum = std::conditional_t<std::is_same_v<T, float>, double, int64_t>;
  const T* xp = x.as<T>();
  T* yp = y.as<T>();
  const int64_t isz = p.I[0] * p.I[1] * p.I[2], osz = p.O[0] * p.O[1] * p.O[2];
  for (int64_t plane = 0; plane < p.N * p.C; ++plane) {
    const T* xs = xp + plane * isz;
    for (int64_t od = 0; od < p.O[0]; ++od) {
      const AxisWindow wd = axis_window(p, 0, od);
      for (int64_t oh = 0; oh < p.O[1]; ++oh) {
        const AxisWindow wh = axis_window(p, 1, oh);
        for (int64_t ow = 0; ow < p.O[2]; ++ow) {
          const AxisWindow ww = axis_window(p, 2, ow);
          Sum sum = 0;
          for (int64_t kd = wd.k0; kd < wd.k1; ++kd)
            for (int64_t kh = wh.k0; kh < wh.k1; ++kh) {
              const T* row = xs + ((wd.start + kd * p.D[0]) * p.I[1] + wh.start + kh * p.D[1]) * p.I[2];
              for (int64_t kw = ww.k0; kw < ww.k1; ++kw) sum += row[ww.start + kw * p.D[2]];
            }
          const int64_t inside = (wd.k1 - wd.k0) * (wh.k1 - wh.k0) * (ww.k1 - ww.k0);
          const int64_t cnt = p.count_include_pad ? wd.padded * wh.padded * ww.padded : inside;
          T& out = yp[plane * osz + (od * p.O[1] + oh) * p.O[2] + ow];
          if constexpr (std::is_same_v<T, float>) {
            out = cnt > 0 ? static_cast<float>(sum / static_cast<double>(cnt)) : 0.0f;
          } else {
            sum += zp * (cnt - inside);  // the counted padded taps
            const float v = cnt > 0 ? std::nearbyintf(static_cast<float>(sum) / static_cast<float>(cnt))
                                    : static_cast<float>(zp);
            out = static_cast<T>(std::clamp(static_cast<int>(v), 0, 255));
          }
        }
      }
    }
  }
}

void average_pool(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  const PoolGeom p = pool_geom(g, n, in[0], out[0]);
  if (in[0].dtype == DType::f32) return average_pool_t<float>(p, in[0], out[0], 0);
  if (in[0].dtype != DType::u8) fail(n, "reference AveragePool expects f32 or u8");
  const auto& q = g.value(n.inputs[0]).quant;
  if (!q || q->zero_point.size() != 1) fail(n, "u8 AveragePool needs a per-tensor quantized input");
  average_pool_t<uint8_t>(p, in[0], out[0], q->zero_point[0]);
}

// u8 GlobalAveragePool requantizes to its output's own parameters (an average spans a fraction of
// its input's range): the real mean s_x * (sum_q / n - zp_x) in codes of s_y, zp_y is
// q = zp_y + nearbyint(double(sum_q - n * zp_x) * (s_x / (s_y * n))), the ratio in double, the
// product rounded to nearest (ties to even) and clamped to the output's code range. With the
// input's own parameters it is the codes' mean, nearbyintf(float(sum_q) / float(n)), as before
// outputs had ranges of their own (kernels/qu8-pool/qu8_pool.h holds the fast kernels to this byte
// for byte). A side without parameters reads as scale 1, zp 0.
void global_average_pool_u8(const Graph& g, const Node& n, const TensorView& x, int64_t planes, int64_t inner,
                            const TensorView& y) {
  const Value& vx = g.value(n.inputs[0]);
  const Value& vy = g.value(n.outputs[0]);
  auto per_tensor = [&](const Value& v, double& scale, int64_t& zp) {
    scale = 1.0, zp = 0;
    if (!v.quant) return;
    if (v.quant->scale.size() != 1 || v.quant->zero_point.size() != 1)
      fail(n, "u8 GlobalAveragePool needs per-tensor quantization of '" + v.name + "'");
    scale = v.quant->scale[0], zp = v.quant->zero_point[0];
  };
  double sx, sy;
  int64_t zx, zy;
  per_tensor(vx, sx, zx);
  per_tensor(vy, sy, zy);
  const double ratio = sx / (sy * static_cast<double>(inner));
  const CodeRange r = code_range(vy);
  const uint8_t* xp = x.as<uint8_t>();
  uint8_t* yp = y.as<uint8_t>();
  for (int64_t plane = 0; plane < planes; ++plane) {
    int64_t sum = 0;
    for (int64_t i = 0; i < inner; ++i) sum += xp[plane * inner + i];
    const double q = sx == sy && zx == zy
                         ? static_cast<double>(std::nearbyintf(static_cast<float>(sum) / static_cast<float>(inner)))
                         : static_cast<double>(zy) + std::nearbyint(static_cast<double>(sum - inner * zx) * ratio);
    yp[plane] = static_cast<uint8_t>(q < r.lo ? r.lo : q > r.hi ? r.hi : q);
  }
}

template <bool kMax>
void global_pool(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  const Shape& s = in[0].shape;
  if (s.size() < 2) fail(n, "global pooling expects rank >= 2");
  int64_t inner = 1;
  for (size_t i = 2; i < s.size(); ++i) inner *= s[i];
  if (!kMax && in[0].dtype == DType::u8) return global_average_pool_u8(g, n, in[0], s[0] * s[1], inner, out[0]);
  if (in[0].dtype != DType::f32) fail(n, "reference global pooling expects f32");
  const float* x = in[0].as<float>();
  float* y = out[0].as<float>();
  for (int64_t plane = 0; plane < s[0] * s[1]; ++plane) {
    const float* xp = x + plane * inner;
    if constexpr (kMax) {
      float m = -INFINITY;
      for (int64_t i = 0; i < inner; ++i) m = std::max(m, xp[i]);
      y[plane] = m;
    } else {
      double sum = 0;
      for (int64_t i = 0; i < inner; ++i) sum += xp[i];
      y[plane] = static_cast<float>(sum / static_cast<double>(inner));
    }
  }
}

// ---- reductions ----

enum class Red { mean, sum, max, min, prod, sum_square, l1, l2 };

template <class T, Red R>
void reduce_t(const TensorView& x, const Shape& keep, const TensorView& y) {
  const int64_t on = y.numel();
  const double init = R == Red::max ? -std::numeric_limits<double>::infinity()
                    : R == Red::min ? std::numeric_limits<double>::infinity()
                    : R == Red::prod ? 1.0
                                     : 0.0;
  std::vector<double> acc(static_cast<size_t>(on), init);
  const T* xp = x.as<T>();
  ref::for_each_broadcast<1>(x.shape, {keep}, [&](int64_t i, const std::array<int64_t, 1>& off) {
    double& a = acc[static_cast<size_t>(off[0])];
    const double v = static_cast<double>(xp[i]);
    if constexpr (R == Red::max) a = std::max(a, v);
    else if constexpr (R == Red::min) a = std::min(a, v);
    else if constexpr (R == Red::prod) a *= v;
    else if constexpr (R == Red::sum_square || R == Red::l2) a += v * v;
    else if constexpr (R == Red::l1) a += std::abs(v);
    else a += v;
  });
  const double count = on ? static_cast<double>(x.numel()) / static_cast<double>(on) : 1.0;
  T* yp = y.as<T>();
  for (int64_t o = 0; o < on; ++o) {
    double v = acc[static_cast<size_t>(o)];
    if constexpr (R == Red::mean) v /= count;
    if constexpr (R == Red::l2) v = std::sqrt(v);
    yp[o] = static_cast<T>(v);
  }
}

template <Red R>
void reduce(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  const Shape& s = in[0].shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  // Axes come from the attribute (opset <= 17 form) or from input 1 (ReduceSum-13 form).
  std::vector<int64_t> axes = n.attrs.get_ints("axes");
  if (!n.attrs.has("axes") && present(in, 1)) axes = ref::view_ints(in[1]);
  if (axes.empty() && n.attrs.get_int("noop_with_empty_axes", 0) != 0) {
    std::memcpy(out[0].data, in[0].data, static_cast<size_t>(in[0].nbytes()));
    return;
  }
  Shape keep = s;
  if (axes.empty()) std::fill(keep.begin(), keep.end(), 1);
  for (int64_t a : axes) keep[static_cast<size_t>(ref::norm_axis(n, a, rank))] = 1;
  switch (in[0].dtype) {
    case DType::f32: reduce_t<float, R>(in[0], keep, out[0]); break;
    case DType::i64: reduce_t<int64_t, R>(in[0], keep, out[0]); break;
    case DType::i32: reduce_t<int32_t, R>(in[0], keep, out[0]); break;
    case DType::u8: reduce_t<uint8_t, R>(in[0], keep, out[0]); break;
    case DType::i8: reduce_t<int8_t, R>(in[0], keep, out[0]); break;
    default: fail(n, std::string("reference reduction does not support ") + dtype_name(in[0].dtype));
  }
}

// ---- Softmax ----

template <bool kLog>
void softmax(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  if (in[0].dtype != DType::f32) fail(n, "reference Softmax expects f32");
  const Shape& s = in[0].shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  // coerce_2d (opset < 13): flatten to [prod(s[:axis]), prod(s[axis:])] and normalise rows.
  const bool coerce = n.attrs.get_int("coerce_2d", 0) != 0;
  const int64_t axis = ref::norm_axis(n, n.attrs.get_int("axis", coerce ? 1 : -1), std::max<int64_t>(rank, 1));
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = s[static_cast<size_t>(i)];
    if (i < axis) outer *= d;
    else if (i == axis || coerce) len *= d;
    else inner *= d;
  }
  const float* x = in[0].as<float>();
  float* y = out[0].as<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float* xp = x + o * len * inner + i;
      float* yp = y + o * len * inner + i;
      float m = -INFINITY;
      for (int64_t k = 0; k < len; ++k) m = std::max(m, xp[k * inner]);
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(static_cast<double>(xp[k * inner] - m));
      for (int64_t k = 0; k < len; ++k) {
        const double v = static_cast<double>(xp[k * inner] - m);
        yp[k * inner] = static_cast<float>(kLog ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
}

// ---- Resize ----

struct Tap {
  int64_t offset;  // element offset contribution (index * stride)
  double weight;
};

double cubic_weight(double d, double A) {  // Keys kernel at distance |d|
  d = std::abs(d);
  if (d <= 1) return ((A + 2) * d - (A + 3)) * d * d + 1;
  if (d < 2) return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  return 0;
}

void resize(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  if (in[0].dtype != DType::f32) fail(n, "reference Resize expects f32");
  const auto& a = n.attrs;
  const std::string mode = a.get_string("mode", "nearest");
  const std::string ctm = a.get_string("coordinate_transformation_mode", "half_pixel");
  const std::string nearest_mode = a.get_string("nearest_mode", "round_prefer_floor");
  const double A = a.get_float("cubic_coeff_a", -0.75f);
  const bool exclude_outside = a.get_int("exclude_outside", 0) != 0;
  const float extrapolation = a.get_float("extrapolation_value", 0.0f);
  if (mode != "nearest" && mode != "linear" && mode != "cubic") fail(n, "unsupported Resize mode '" + mode + "'");

  const Shape& xs = in[0].shape;
  const Shape& ys = out[0].shape;
  const size_t r = xs.size();
  std::vector<double> scale(r), roi_lo(r, 0.0), roi_hi(r, 1.0);
  const bool have_scales = present(in, 2) && in[2].numel() > 0;
  for (size_t d = 0; d < r; ++d)
    scale[d] = have_scales ? static_cast<double>(in[2].as<float>()[d])
                           : static_cast<double>(ys[d]) / static_cast<double>(xs[d]);
  if (present(in, 1) && in[1].numel() == static_cast<int64_t>(2 * r))
    for (size_t d = 0; d < r; ++d) roi_lo[d] = ref::view_double(in[1], static_cast<int64_t>(d)),
                                   roi_hi[d] = ref::view_double(in[1], static_cast<int64_t>(d + r));

  // Separable: per axis and output coordinate, the input taps and weights (empty = extrapolate).
  const Shape xst = ref::row_major_strides(xs);
  std::vector<std::vector<std::vector<Tap>>> taps(r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t len_in = xs[d];
    const double len_out = scale[d] * static_cast<double>(len_in);  // ONNX uses the unrounded length
    taps[d].resize(static_cast<size_t>(ys[d]));
    for (int64_t o = 0; o < ys[d]; ++o) {
      const double xo = static_cast<double>(o);
      double xi;
      if (ctm == "half_pixel") xi = (xo + 0.5) / scale[d] - 0.5;
      else if (ctm == "pytorch_half_pixel") xi = len_out > 1 ? (xo + 0.5) / scale[d] - 0.5 : 0.0;
      else if (ctm == "asymmetric") xi = xo / scale[d];
      else if (ctm == "tf_half_pixel_for_nn") xi = (xo + 0.5) / scale[d];
      else if (ctm == "align_corners") xi = len_out == 1 ? 0.0 : xo * static_cast<double>(len_in - 1) / (len_out - 1);
      else if (ctm == "tf_crop_and_resize") {
        const double span = (roi_hi[d] - roi_lo[d]) * static_cast<double>(len_in - 1);
        xi = (len_out == 1 ? span / 2 : xo * span / (len_out - 1)) + roi_lo[d] * static_cast<double>(len_in - 1);
        if (xi < 0 || xi > static_cast<double>(len_in - 1)) continue;  // extrapolated
      } else {
        fail(n, "unsupported coordinate_transformation_mode '" + ctm + "'");
      }
      // x0 is the neighbour at or left of xi with ratio in (0, 1] (an exact integer picks x0 + 1).
      const double fl = std::floor(xi);
      const int64_t x0 = static_cast<int64_t>(fl) - (xi == fl ? 1 : 0);
      const double ratio = xi - static_cast<double>(x0);
      std::vector<std::pair<int64_t, double>> raw;
      if (mode == "nearest") {
        bool up;
        if (ratio == 1.0) up = true;
        else if (nearest_mode == "round_prefer_floor") up = ratio > 0.5;
        else if (nearest_mode == "round_prefer_ceil") up = ratio >= 0.5;
        else if (nearest_mode == "floor") up = false;
        else if (nearest_mode == "ceil") up = true;
        else fail(n, "unsupported nearest_mode '" + nearest_mode + "'");
        raw = {{x0, up ? 0.0 : 1.0}, {x0 + 1, up ? 1.0 : 0.0}};
      } else if (mode == "linear") {
        raw = {{x0, 1.0 - ratio}, {x0 + 1, ratio}};
      } else {
        for (int64_t k = -1; k <= 2; ++k) raw.push_back({x0 + k, cubic_weight(ratio - static_cast<double>(k), A)});
      }
      if (exclude_outside) {
        double sum = 0;
        for (auto& [i, w] : raw) {
          if (i < 0 || i >= len_in) w = 0;
          sum += w;
        }
        if (sum != 0)
          for (auto& t : raw) t.second /= sum;
      }
      auto& out_taps = taps[d][static_cast<size_t>(o)];
      for (auto& [i, w] : raw) {
        if (w == 0) continue;
        out_taps.push_back({std::clamp<int64_t>(i, 0, len_in - 1) * xst[d], w});
      }
      if (out_taps.empty()) out_taps.push_back({std::clamp<int64_t>(x0 + 1, 0, len_in - 1) * xst[d], 0.0});
    }
  }

  const float* x = in[0].as<float>();
  float* y = out[0].as<float>();
  const int64_t total = out[0].numel();
  std::vector<int64_t> idx(r, 0);
  // Sums the tensor product of the per-axis taps at output index idx.
  auto eval = [&](auto& self, size_t d, int64_t off, double w) -> double {
    if (d == r) return w * static_cast<double>(x[off]);
    double s = 0;
    for (const Tap& t : taps[d][static_cast<size_t>(idx[d])]) s += self(self, d + 1, off + t.offset, w * t.weight);
    return s;
  };
  for (int64_t o = 0; o < total; ++o) {
    bool extrapolate = false;
    for (size_t d = 0; d < r; ++d) extrapolate |= taps[d][static_cast<size_t>(idx[d])].empty();
    y[o] = extrapolate ? extrapolation : static_cast<float>(eval(eval, 0, 0, 1.0));
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < ys[d]) break;
      idx[d] = 0;
    }
  }
}

// ---- Pad ----

void pad(const Graph& g, const Node& n, std::span<const TensorView> in, std::span<const TensorView> out) {
  const Shape& xs = in[0].shape;
  const size_t r = xs.size();
  const size_t es = ref::elem_bytes(n, in[0].dtype);
  const std::string mode = n.attrs.get_string("mode", "constant");
  const std::vector<int64_t> raw = ref::view_ints(in[1]);
  // Optional axes (input 3) select which axes `pads` refers to.
  std::vector<int64_t> axes;
  if (present(in, 3)) {
    for (int64_t a : ref::view_ints(in[3])) axes.push_back(ref::norm_axis(n, a, static_cast<int64_t>(r)));
  } else {
    for (size_t i = 0; i < r; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (raw.size() != 2 * axes.size()) fail(n, "pads must have 2 entries per padded axis");
  std::vector<int64_t> pb(r, 0), pe(r, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    pb[static_cast<size_t>(axes[i])] = raw[i];
    pe[static_cast<size_t>(axes[i])] = raw[i + axes.size()];
  }
  const Shape st = ref::row_major_strides(xs);
  std::vector<std::vector<int64_t>> map(r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t len = xs[d], olen = len + pb[d] + pe[d];
    if (olen != out[0].shape[d]) fail(n, "padded shape disagrees with the inferred output shape");
    map[d].resize(static_cast<size_t>(std::max<int64_t>(olen, 0)));
    for (int64_t o = 0; o < olen; ++o) {
      int64_t j = o - pb[d];
      if (j < 0 || j >= len) {
        if (mode == "constant" || len == 0) {
          j = -1;
        } else if (mode == "edge") {
          j = std::clamp<int64_t>(j, 0, len - 1);
        } else if (mode == "reflect") {
          if (len == 1) j = 0;
          while (j < 0 || j >= len) j = j < 0 ? -j : 2 * (len - 1) - j;
        } else if (mode == "wrap") {
          j = ((j % len) + len) % len;
        } else {
          fail(n, "unsupported Pad mode '" + mode + "'");
        }
      }
      map[d][static_cast<size_t>(o)] = j < 0 ? -1 : j * st[d];
    }
  }
  const void* fill = present(in, 2) && in[2].numel() > 0 ? in[2].data : nullptr;
  if (fill && in[2].dtype != in[0].dtype) fail(n, "constant_value must have the data's dtype");
  ref::copy_mapped(out[0].data, in[0].data, out[0].shape, map, es, fill);
}

ReferenceRegistrar reg_max_pool("MaxPool", max_pool);
ReferenceRegistrar reg_average_pool("AveragePool", average_pool);
ReferenceRegistrar reg_global_average_pool("GlobalAveragePool", global_pool<false>);
ReferenceRegistrar reg_global_max_pool("GlobalMaxPool", global_pool<true>);
ReferenceRegistrar reg_reduce_mean("ReduceMean", reduce<Red::mean>);
ReferenceRegistrar reg_reduce_sum("ReduceSum", reduce<Red::sum>);
ReferenceRegistrar reg_reduce_max("ReduceMax", reduce<Red::max>);
ReferenceRegistrar reg_reduce_min("ReduceMin", reduce<Red::min>);
ReferenceRegistrar reg_reduce_prod("ReduceProd", reduce<Red::prod>);
ReferenceRegistrar reg_reduce_sum_square("ReduceSumSquare", reduce<Red::sum_square>);
ReferenceRegistrar reg_reduce_l1("ReduceL1", reduce<Red::l1>);
ReferenceRegistrar reg_reduce_l2("ReduceL2", reduce<Red::l2>);
ReferenceRegistrar reg_softmax("Softmax", softmax<false>);
ReferenceRegistrar reg_log_softmax("LogSoftmax", softmax<true>);
ReferenceRegistrar reg_resize("Resize", resize);
ReferenceRegistrar reg_pad("Pad", pad);

}  // namespace
}  // namespace lowbit
