// Reference data-movement and shape ops. Every kernel works on raw elements of the dtype's byte
// size, so f32 / i64 / i32 / u8 / i8 / bool all share one implementation.
#include <algorithm>
#include <cstring>
#include <vector>

#include "lowbit/kernels/reference/broadcast.h"
#include "lowbit/kernels/reference/reference.h"

namespace lowbit {
namespace {
using ref::fail;
using ref::present;
using In = std::span<const TensorView>;
using Out = std::span<const TensorView>;

// Reshape / Flatten / Squeeze / Unsqueeze: same bytes, new shape.
void copy_bytes(const Graph&, const Node& n, In in, Out out) {
  if (in[0].nbytes() != out[0].nbytes()) fail(n, "input and output sizes differ");
  if (out[0].data != in[0].data) std::memcpy(out[0].data, in[0].data, static_cast<size_t>(in[0].nbytes()));
}

void transpose(const Graph&, const Node& n, In in, Out out) {
  const Shape& xs = in[0].shape;
  const size_t r = xs.size();
  std::vector<int64_t> perm = n.attrs.get_ints("perm");
  if (perm.empty())
    for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(r - 1 - i));
  if (perm.size() != r) fail(n, "perm must have one entry per axis");
  const Shape st = ref::row_major_strides(xs);
  std::vector<std::vector<int64_t>> map(r);
  for (size_t d = 0; d < r; ++d) {
    const size_t src = static_cast<size_t>(ref::norm_axis(n, perm[d], static_cast<int64_t>(r)));
    for (int64_t i = 0; i < xs[src]; ++i) map[d].push_back(i * st[src]);
  }
  ref::copy_mapped(out[0].data, in[0].data, out[0].shape, map, ref::elem_bytes(n, in[0].dtype), nullptr);
}

void depth_to_space(const Graph&, const Node& n, In in, Out out) {
  const Shape& xs = in[0].shape;
  const int64_t b = n.attrs.get_int("blocksize", 1), N = xs[0], C = xs[1], H = xs[2], W = xs[3], OC = C / (b * b);
  const bool crd = n.attrs.get_string("mode", "DCR") == "CRD";
  const size_t e = ref::elem_bytes(n, in[0].dtype);
  const auto* x = static_cast<const uint8_t*>(in[0].data);
  auto* y = static_cast<uint8_t*>(out[0].data);
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t c = 0; c < OC; ++c)
      for (int64_t oh = 0; oh < H * b; ++oh)
        for (int64_t ow = 0; ow < W * b; ++ow) {
          const int64_t i = oh % b, j = ow % b;
          const int64_t ic = crd ? c * b * b + i * b + j : (i * b + j) * OC + c;
          const int64_t src = ((nn * C + ic) * H + oh / b) * W + ow / b;
          const int64_t dst = ((nn * OC + c) * H * b + oh) * W * b + ow;
          std::memcpy(y + dst * e, x + src * e, e);
        }
}

// Splits `s` around `axis` into outer (before) and inner (after) element counts.
void outer_inner(const Shape& s, int64_t axis, int64_t& outer, int64_t& inner) {
  outer = inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    if (i < axis) outer *= s[static_cast<size_t>(i)];
    if (i > axis) inner *= s[static_cast<size_t>(i)];
  }
}

void concat(const Graph&, const Node& n, In in, Out out) {
  const Shape& ys = out[0].shape;
  const int64_t axis = ref::norm_axis(n, n.attrs.get_int("axis", 0), static_cast<int64_t>(ys.size()));
  const size_t es = ref::elem_bytes(n, out[0].dtype);
  int64_t outer, inner;
  outer_inner(ys, axis, outer, inner);
  auto* y = static_cast<uint8_t*>(out[0].data);
  size_t pos = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const TensorView& v : in) {
      if (v.shape.size() != ys.size()) fail(n, "inputs must all have the output's rank");
      const size_t chunk = static_cast<size_t>(v.shape[static_cast<size_t>(axis)] * inner) * es;
      std::memcpy(y + pos, static_cast<const uint8_t*>(v.data) + static_cast<size_t>(o) * chunk, chunk);
      pos += chunk;
    }
}

// Split: the inferred output shapes already encode the split sizes (input 1 or num_outputs).
void split(const Graph&, const Node& n, In in, Out out) {
  const Shape& xs = in[0].shape;
  const int64_t axis = ref::norm_axis(n, n.attrs.get_int("axis", 0), static_cast<int64_t>(xs.size()));
  const size_t es = ref::elem_bytes(n, in[0].dtype);
  int64_t outer, inner;
  outer_inner(xs, axis, outer, inner);
  int64_t total = 0;
  for (const TensorView& v : out) total += v.shape.at(static_cast<size_t>(axis));
  if (total != xs[static_cast<size_t>(axis)]) fail(n, "split sizes do not add up to the input's axis length");
  const auto* x = static_cast<const uint8_t*>(in[0].data);
  size_t pos = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const TensorView& v : out) {
      const size_t chunk = static_cast<size_t>(v.shape[static_cast<size_t>(axis)] * inner) * es;
      if (v.data) std::memcpy(static_cast<uint8_t*>(v.data) + static_cast<size_t>(o) * chunk, x + pos, chunk);
      pos += chunk;
    }
}

void shape_op(const Graph&, const Node& n, In in, Out out) {
  const Shape& xs = in[0].shape;
  const int64_t r = static_cast<int64_t>(xs.size());
  auto clamp_axis = [&](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + r : a, 0, r); };
  const int64_t start = clamp_axis(n.attrs.get_int("start", 0));
  const int64_t end = clamp_axis(n.attrs.get_int("end", r));
  const int64_t count = std::max<int64_t>(0, end - start);
  if (out[0].numel() != count) fail(n, "output length disagrees with start/end");
  for (int64_t i = 0; i < count; ++i) out[0].as<int64_t>()[i] = xs[static_cast<size_t>(start + i)];
}

void size_op(const Graph&, const Node& n, In in, Out out) { out[0].as<int64_t>()[0] = in[0].numel(); }

void gather(const Graph&, const Node& n, In in, Out out) {
  const Shape& xs = in[0].shape;
  const int64_t axis = ref::norm_axis(n, n.attrs.get_int("axis", 0), static_cast<int64_t>(xs.size()));
  const size_t es = ref::elem_bytes(n, in[0].dtype);
  int64_t outer, inner;
  outer_inner(xs, axis, outer, inner);
  const int64_t len = xs[static_cast<size_t>(axis)], count = in[1].numel();
  const size_t chunk = static_cast<size_t>(inner) * es;
  const auto* x = static_cast<const uint8_t*>(in[0].data);
  auto* y = static_cast<uint8_t*>(out[0].data);
  for (int64_t j = 0; j < count; ++j) {
    int64_t idx = ref::view_int(in[1], j);
    if (idx < -len || idx >= len) fail(n, "index " + std::to_string(idx) + " out of range for axis length " + std::to_string(len));
    if (idx < 0) idx += len;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y + static_cast<size_t>(o * count + j) * chunk, x + static_cast<size_t>(o * len + idx) * chunk, chunk);
  }
}

void gather_elements(const Graph&, const Node& n, In in, Out out) {
  const Shape& xs = in[0].shape;
  const Shape& is = in[1].shape;
  const size_t r = xs.size();
  const size_t axis = static_cast<size_t>(ref::norm_axis(n, n.attrs.get_int("axis", 0), static_cast<int64_t>(r)));
  const Shape st = ref::row_major_strides(xs);
  const int64_t len = xs[axis];
  ref::with_uint_of_size(ref::elem_bytes(n, in[0].dtype), [&](auto tag) {
    using T = decltype(tag);
    const T* x = in[0].as<T>();
    T* y = out[0].as<T>();
    std::vector<int64_t> idx(r, 0);
    for (int64_t o = 0, e = in[1].numel(); o < e; ++o) {
      int64_t k = ref::view_int(in[1], o);
      if (k < -len || k >= len) fail(n, "index " + std::to_string(k) + " out of range");
      if (k < 0) k += len;
      int64_t off = 0;
      for (size_t d = 0; d < r; ++d) off += (d == axis ? k : idx[d]) * st[d];
      y[o] = x[off];
      for (size_t d = r; d-- > 0;) {
        if (++idx[d] < is[d]) break;
        idx[d] = 0;
      }
    }
  });
}

void slice(const Graph&, const Node& n, In in, Out out) {
  const Shape& xs = in[0].shape;
  const int64_t r = static_cast<int64_t>(xs.size());
  const std::vector<int64_t> starts = ref::view_ints(in[1]), ends = ref::view_ints(in[2]);
  std::vector<int64_t> axes, steps;
  if (present(in, 3)) axes = ref::view_ints(in[3]);
  else
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (present(in, 4)) steps = ref::view_ints(in[4]);
  else steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(n, "starts, ends, axes and steps must have the same length");
  std::vector<int64_t> first(static_cast<size_t>(r), 0), step(static_cast<size_t>(r), 1), count(xs);
  for (size_t i = 0; i < starts.size(); ++i) {
    const size_t a = static_cast<size_t>(ref::norm_axis(n, axes[i], r));
    const int64_t dim = xs[a], s = steps[i];
    if (s == 0) fail(n, "slice step must not be 0");
    int64_t b = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count[a] = std::max<int64_t>(0, (e - b + s - 1) / s);
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count[a] = std::max<int64_t>(0, (b - e + (-s) - 1) / (-s));
    }
    first[a] = b;
    step[a] = s;
  }
  if (count != out[0].shape) fail(n, "sliced shape disagrees with the inferred output shape");
  const Shape st = ref::row_major_strides(xs);
  std::vector<std::vector<int64_t>> map(static_cast<size_t>(r));
  for (size_t d = 0; d < static_cast<size_t>(r); ++d)
    for (int64_t i = 0; i < count[d]; ++i) map[d].push_back((first[d] + i * step[d]) * st[d]);
  ref::copy_mapped(out[0].data, in[0].data, out[0].shape, map, ref::elem_bytes(n, in[0].dtype), nullptr);
}

void expand(const Graph&, const Node& n, In in, Out out) {
  const Shape& ys = out[0].shape;
  if (ys.size() < in[0].shape.size()) fail(n, "output rank is below the input's");
  const Shape bst = ref::broadcast_strides(in[0].shape, ys);
  std::vector<std::vector<int64_t>> map(ys.size());
  for (size_t d = 0; d < ys.size(); ++d)
    for (int64_t i = 0; i < ys[d]; ++i) map[d].push_back(i * bst[d]);
  ref::copy_mapped(out[0].data, in[0].data, ys, map, ref::elem_bytes(n, in[0].dtype), nullptr);
}

void tile(const Graph&, const Node& n, In in, Out out) {
  const Shape& xs = in[0].shape;
  const Shape& ys = out[0].shape;
  if (ys.size() != xs.size()) fail(n, "output rank differs from the input's");
  const Shape st = ref::row_major_strides(xs);
  std::vector<std::vector<int64_t>> map(xs.size());
  for (size_t d = 0; d < xs.size(); ++d)
    for (int64_t i = 0; i < ys[d]; ++i) map[d].push_back((i % xs[d]) * st[d]);
  ref::copy_mapped(out[0].data, in[0].data, ys, map, ref::elem_bytes(n, in[0].dtype), nullptr);
}

// Fills the output with copies of one element (or zeros without one).
void fill_with(const Node& n, const TensorView& y, const void* elem) {
  if (!elem) {
    std::memset(y.data, 0, static_cast<size_t>(y.nbytes()));
    return;
  }
  const size_t es = ref::elem_bytes(n, y.dtype);
  auto* p = static_cast<uint8_t*>(y.data);
  for (int64_t i = 0, e = y.numel(); i < e; ++i) std::memcpy(p + static_cast<size_t>(i) * es, elem, es);
}

void constant_of_shape(const Graph&, const Node& n, In in, Out out) {
  const Tensor* v = n.attrs.get_tensor("value");
  if (v && (v->numel() != 1 || v->dtype() != out[0].dtype)) fail(n, "value must be one element of the output dtype");
  fill_with(n, out[0], v ? v->raw() : nullptr);
}

void constant(const Graph&, const Node& n, In in, Out out) {
  const auto& a = n.attrs;
  const TensorView& y = out[0];
  if (const Tensor* t = a.get_tensor("value")) {
    if (t->nbytes() != y.nbytes()) fail(n, "value size disagrees with the output");
    std::memcpy(y.data, t->raw(), static_cast<size_t>(t->nbytes()));
  } else if (a.has("value_float")) {
    y.as<float>()[0] = a.get_float("value_float", 0.0f);
  } else if (a.has("value_int")) {
    y.as<int64_t>()[0] = a.get_int("value_int", 0);
  } else if (a.has("value_floats")) {
    const auto v = a.get_floats("value_floats");
    std::copy(v.begin(), v.end(), y.as<float>());
  } else if (a.has("value_ints")) {
    const auto v = a.get_ints("value_ints");
    std::copy(v.begin(), v.end(), y.as<int64_t>());
  } else {
    fail(n, "Constant has no supported value attribute");
  }
}

void range(const Graph&, const Node& n, In in, Out out) {
  const int64_t count = out[0].numel();
  switch (out[0].dtype) {
    case DType::f32: {
      const float s = in[0].as<float>()[0], d = in[2].as<float>()[0];
      for (int64_t i = 0; i < count; ++i) out[0].as<float>()[i] = s + static_cast<float>(i) * d;
      break;
    }
    case DType::i64: case DType::i32: {
      const int64_t s = ref::view_int(in[0], 0), d = ref::view_int(in[2], 0);
      for (int64_t i = 0; i < count; ++i) {
        if (out[0].dtype == DType::i64) out[0].as<int64_t>()[i] = s + i * d;
        else out[0].as<int32_t>()[i] = static_cast<int32_t>(s + i * d);
      }
      break;
    }
    default: fail(n, std::string("reference Range does not support ") + dtype_name(out[0].dtype));
  }
}

ReferenceRegistrar reg_reshape("Reshape", copy_bytes);
ReferenceRegistrar reg_flatten("Flatten", copy_bytes);
ReferenceRegistrar reg_squeeze("Squeeze", copy_bytes);
ReferenceRegistrar reg_unsqueeze("Unsqueeze", copy_bytes);
ReferenceRegistrar reg_transpose("Transpose", transpose);
ReferenceRegistrar reg_depth_to_space("DepthToSpace", depth_to_space);
ReferenceRegistrar reg_concat("Concat", concat);
ReferenceRegistrar reg_split("Split", split);
ReferenceRegistrar reg_shape("Shape", shape_op);
ReferenceRegistrar reg_size("Size", size_op);
ReferenceRegistrar reg_gather("Gather", gather);
ReferenceRegistrar reg_gather_elements("GatherElements", gather_elements);
ReferenceRegistrar reg_slice("Slice", slice);
ReferenceRegistrar reg_expand("Expand", expand);
ReferenceRegistrar reg_tile("Tile", tile);
ReferenceRegistrar reg_constant_of_shape("ConstantOfShape", constant_of_shape);
ReferenceRegistrar reg_constant("Constant", constant);
ReferenceRegistrar reg_range("Range", range);

}  // namespace
}  // namespace lowbit
