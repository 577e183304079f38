#include "lowbit/ir/tensor.h"

#include <cstdlib>

#include "lowbit/common/error.h"
#include "lowbit/ir/codes.h"

namespace lowbit {

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  // The last line of defence against a size that wrapped (validation refuses them earlier, with
  // the value's name): never allocate from an overflowed count.
  if (!tensor_fits(dtype, checked_num_elements(shape_)))
    throw Error("cannot allocate a " + std::string(dtype_name(dtype)) + " tensor of shape " + shape_str(shape_) +
                ": more than the 64 TiB lowbit allows one tensor");
  size_t bytes = static_cast<size_t>(nbytes());
  size_t alloc = ((bytes + 63) / 64) * 64 + 64;  // room for kernels that over-read a vector
  void* p = std::aligned_alloc(64, alloc);
  if (!p) throw Error("out of memory allocating " + std::to_string(alloc) + " bytes");
  std::memset(p, 0, alloc);
  owner_ = std::shared_ptr<void>(p, std::free);
  data_ = p;
}

Tensor Tensor::wrap(DType dtype, Shape shape, const void* data, std::shared_ptr<const void> keepalive) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.owner_ = std::move(keepalive);
  t.data_ = const_cast<void*>(data);
  return t;
}

uint64_t content_hash(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
  auto mix = [&](uint64_t w) {
    h ^= w * 0xbf58476d1ce4e5b9ULL;
    h = ((h << 31) | (h >> 33)) * 0x94d049bb133111ebULL;
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    mix(w);
  }
  uint64_t last = 0;
  if (i < n) std::memcpy(&last, p + i, n - i);
  mix(last);
  return h ^ (h >> 29);
}

Tensor Tensor::reshaped(Shape shape) const {
  if (num_elements(shape) != numel())
    throw Error("cannot reshape " + shape_str(shape_) + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.data_, data_, static_cast<size_t>(nbytes()));
  return t;
}

int64_t read_int(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::i64: return t.data<int64_t>()[i];
    case DType::i32: return t.data<int32_t>()[i];
    case DType::u8: case DType::boolean: return t.data<uint8_t>()[i];
    case DType::i8: return t.data<int8_t>()[i];
    case DType::f32: return static_cast<int64_t>(t.data<float>()[i]);
    case DType::u4: case DType::i4: case DType::u2: case DType::i2: case DType::u1: case DType::b1:
      return load_code(t.raw(), t.dtype(), i);
    default: throw Error(std::string("cannot read ") + dtype_name(t.dtype()) + " as integer");
  }
}

float read_float(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::f32) return t.data<float>()[i];
  return static_cast<float>(read_int(t, i));
}

}  // namespace lowbit
