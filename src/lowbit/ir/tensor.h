#pragma once
// Tensor: an owning, shallow-copyable buffer (64-byte aligned) with dtype and shape.
// TensorView: the non-owning form that kernels see.
#include <cstring>
#include <memory>

#include "lowbit/ir/dtype.h"
#include "lowbit/ir/shape.h"

namespace lowbit {

// True when n elements of t fit the per-tensor cap (kMaxTensorBytes); n < 0 (an overflowed
// count, checked_num_elements) never does.
inline bool tensor_fits(DType t, int64_t n) { return n >= 0 && n <= kMaxTensorBytes * 8 / bit_width(t); }

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::f32;
  Shape shape;

  int64_t numel() const { return num_elements(shape); }
  int64_t nbytes() const { return storage_bytes(dtype, numel()); }
  template <class T> T* as() const { return static_cast<T*>(data); }
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  // zero-filled
  // Wraps memory owned elsewhere (an mmapped artifact); `keepalive` holds the owner.
  static Tensor wrap(DType dtype, Shape shape, const void* data, std::shared_ptr<const void> keepalive);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return num_elements(shape_); }
  int64_t nbytes() const { return storage_bytes(dtype_, numel()); }
  bool empty() const { return !data_; }

  template <class T> T* data() { return static_cast<T*>(data_); }
  template <class T> const T* data() const { return static_cast<const T*>(data_); }
  void* raw() { return data_; }
  const void* raw() const { return data_; }
  TensorView view() const { return TensorView{data_, dtype_, shape_}; }

  // Same bytes, new shape (numel must match).
  Tensor reshaped(Shape shape) const;
  // Deep copy.
  Tensor clone() const;

 private:
  DType dtype_ = DType::f32;
  Shape shape_;
  std::shared_ptr<const void> owner_;
  void* data_ = nullptr;
};

// A 64-bit hash of n bytes (8 at a time; not cryptographic): tells a stored weight layout whether
// the weights it was packed from are still the node's.
uint64_t content_hash(const void* data, size_t n);

// Reads element i of an integer tensor (i64/i32/u8/i8/bool) as int64 — for shape arithmetic.
int64_t read_int(const Tensor& t, int64_t i);
// Reads element i of any non-packed tensor as float.
float read_float(const Tensor& t, int64_t i);

}  // namespace lowbit
