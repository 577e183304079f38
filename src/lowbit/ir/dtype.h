#pragma once
// The one DType enumeration. Sub-byte types exist from day one so that every layer (validation,
// memory planning, artifacts) handles them through the same table instead of special cases.
#include <cstdint>
#include <optional>
#include <string_view>

namespace lowbit {

enum class DType : uint8_t {
  f32,
  i64,  // ONNX shape arithmetic only; folded away before kernels run
  i32,  // accumulators and quantized biases
  u8,
  i8,
  u4,
  i4,
  u2,
  i2,
  b1,       // binary weights: one bit per value, bit 0 = +1, bit 1 = -1 (never 0; kernels/qb1-gemm)
  boolean,  // ONNX bool, one byte per value
  u1,       // 1-bit activation codes {0, 1} (real = scale * (code - zp)), as u2 / u4 one bit narrower
};

struct DTypeInfo {
  DType dtype;
  const char* name;
  int bits;  // bits per value in packed storage
  bool is_signed;
  bool is_float;
  int64_t qmin, qmax;  // representable integer range (0/0 for float)
};

const DTypeInfo& dtype_info(DType t);
inline const char* dtype_name(DType t) { return dtype_info(t).name; }
inline int bit_width(DType t) { return dtype_info(t).bits; }
inline bool is_subbyte(DType t) { return dtype_info(t).bits < 8; }
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes needed to store `count` values densely packed (sub-byte values share bytes;
// low bits first: element 0 occupies the least significant bits of byte 0).
int64_t storage_bytes(DType t, int64_t count);

}  // namespace lowbit
