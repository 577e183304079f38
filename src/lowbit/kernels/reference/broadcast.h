#pragma once
// Internal helpers shared by the reference kernels: numpy-style broadcasting, index-mapped copies
// and element-size dispatch. Data-movement kernels work on raw elements of 1/2/4/8 bytes so that
// one code path serves every byte-addressable dtype (f32, i64, i32, u8, i8, bool).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "lowbit/common/error.h"
#include "lowbit/ir/codes.h"
#include "lowbit/ir/graph.h"

namespace lowbit::ref {

[[noreturn]] inline void fail(const Node& n, const std::string& why) { throw Error("node " + n.label() + ": " + why); }

inline size_t elem_bytes(const Node& n, DType t) {
  if (is_subbyte(t)) fail(n, std::string("reference kernel does not support packed dtype ") + dtype_name(t));
  return static_cast<size_t>(bit_width(t) / 8);
}

// Calls f(T{}) with T the unsigned integer type of `bytes` bytes.
template <class F>
void with_uint_of_size(size_t bytes, F&& f) {
  switch (bytes) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    case 8: f(uint64_t{}); break;
    default: throw Error("unsupported element size " + std::to_string(bytes));
  }
}

inline Shape row_major_strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// Element strides of `in` seen with the rank of `out` (trailing dims aligned); 0 on broadcast dims.
inline Shape broadcast_strides(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) throw Error("cannot broadcast " + shape_str(in) + " to " + shape_str(out));
  Shape st(out.size(), 0);
  Shape ist = row_major_strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1) st[off + i] = ist[i];
  return st;
}

// numpy broadcast of two shapes (callers that trust validated shapes use the output view instead).
inline Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape r(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < r.size(); ++i) {
    int64_t da = i < r.size() - a.size() ? 1 : a[i - (r.size() - a.size())];
    int64_t db = i < r.size() - b.size() ? 1 : b[i - (r.size() - b.size())];
    r[i] = da == 1 ? db : da;
  }
  return r;
}

// Calls f(out_index, offsets) for every element of `out` in row-major order, where offsets[k] is
// the element offset into input k (shape ins[k], broadcast to out).
template <size_t K, class F>
void for_each_broadcast(const Shape& out, const std::array<Shape, K>& ins, F&& f) {
  const int64_t total = num_elements(out);
  if (total == 0) return;
  const size_t rank = out.size();
  std::array<int64_t, K> off{};
  if (rank == 0) {
    f(int64_t{0}, off);
    return;
  }
  std::array<Shape, K> st;
  for (size_t k = 0; k < K; ++k) st[k] = broadcast_strides(ins[k], out);
  const int64_t inner = out[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  std::array<int64_t, K> base{};
  for (int64_t o = 0; o < total; o += inner) {
    off = base;
    for (int64_t i = 0; i < inner; ++i) {
      f(o + i, off);
      for (size_t k = 0; k < K; ++k) off[k] += st[k][rank - 1];
    }
    for (size_t d = rank - 1; d-- > 0;) {
      for (size_t k = 0; k < K; ++k) base[k] += st[k][d];
      if (++idx[d] < out[d]) break;
      for (size_t k = 0; k < K; ++k) base[k] -= st[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

// Generic gather-style copy: output element at multi-index i reads source element
// sum_d map[d][i[d]]; a negative map entry on any axis writes `fill` (a pointer to one element,
// or nullptr for zero) instead. Covers Transpose, Slice, Expand, Tile and Pad.
inline void copy_mapped(void* dst, const void* src, const Shape& out, const std::vector<std::vector<int64_t>>& map,
                        size_t es, const void* fill) {
  with_uint_of_size(es, [&](auto tag) {
    using T = decltype(tag);
    T* d = static_cast<T*>(dst);
    const T* s = static_cast<const T*>(src);
    T fv{};
    if (fill) std::memcpy(&fv, fill, es);
    const int64_t total = num_elements(out);
    if (total == 0) return;
    const size_t r = out.size();
    if (r == 0) {
      d[0] = s[0];
      return;
    }
    std::vector<int64_t> idx(r, 0);
    const std::vector<int64_t>& last = map[r - 1];
    const int64_t inner = out[r - 1];
    for (int64_t o = 0; o < total; o += inner) {
      int64_t b = 0;
      for (size_t a = 0; a + 1 < r && b >= 0; ++a) {
        int64_t m = map[a][static_cast<size_t>(idx[a])];
        b = m < 0 ? -1 : b + m;
      }
      if (b < 0) {
        for (int64_t i = 0; i < inner; ++i) d[o + i] = fv;
      } else {
        for (int64_t i = 0; i < inner; ++i) {
          int64_t m = last[static_cast<size_t>(i)];
          d[o + i] = m < 0 ? fv : s[b + m];
        }
      }
      for (size_t a = r - 1; a-- > 0;) {
        if (++idx[a] < out[a]) break;
        idx[a] = 0;
      }
    }
  });
}

// Normalises a possibly negative axis against `rank`; fails naming the node when out of range.
inline int64_t norm_axis(const Node& n, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    fail(n, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// Reads element i of an integer view (i64/i32/u8/i8/bool) or f32 view as int64.
inline int64_t view_int(const TensorView& v, int64_t i) {
  switch (v.dtype) {
    case DType::i64: return v.as<int64_t>()[i];
    case DType::i32: return v.as<int32_t>()[i];
    case DType::u8: case DType::boolean: return v.as<uint8_t>()[i];
    case DType::i8: return v.as<int8_t>()[i];
    case DType::f32: return static_cast<int64_t>(v.as<float>()[i]);
    case DType::u4: case DType::i4: case DType::u2: case DType::i2: return load_code(v.data, v.dtype, i);
    default: throw Error(std::string("cannot read ") + dtype_name(v.dtype) + " as integer");
  }
}

inline double view_double(const TensorView& v, int64_t i) {
  if (v.dtype == DType::f32) return v.as<float>()[i];
  return static_cast<double>(view_int(v, i));
}

inline std::vector<int64_t> view_ints(const TensorView& v) {
  std::vector<int64_t> r(static_cast<size_t>(v.numel()));
  for (int64_t i = 0; i < v.numel(); ++i) r[static_cast<size_t>(i)] = view_int(v, i);
  return r;
}

inline bool present(std::span<const TensorView> in, size_t i) { return i < in.size() && in[i].data != nullptr; }

}  // namespace lowbit::ref
