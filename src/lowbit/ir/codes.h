#pragma once
// Integer codes in any storage width: one accessor for 8-bit and packed sub-byte tensors, so that
// reference kernels, packers and the quantizer read every width the same way.
//
// Packed layout (the ONNX INT4 / INT2 order): element i occupies bits [(i * b) % 8, + b) of byte
// (i * b) / 8, low bits first; a tail byte's unused bits are zero. Signed codes are two's
// complement in b bits and sign-extended on load, except b1: its bit is the sign of a +-1 value
// (0 = +1, 1 = -1), so it loads as -1 or +1 and 0 is not a b1 code.
#include <cstdint>

#include "lowbit/ir/tensor.h"

namespace lowbit {

inline int32_t load_code(const void* data, DType t, int64_t i) {
  const auto* p = static_cast<const uint8_t*>(data);
  const int b = bit_width(t);
  if (b == 8) return dtype_info(t).is_signed ? int32_t{static_cast<const int8_t*>(data)[i]} : int32_t{p[i]};
  const int64_t bit = i * b;
  const uint32_t mask = (1u << b) - 1u;
  const uint32_t raw = (p[bit >> 3] >> (bit & 7)) & mask;
  if (t == DType::b1) return raw ? -1 : 1;
  if (!dtype_info(t).is_signed) return static_cast<int32_t>(raw);
  const uint32_t sign = 1u << (b - 1);
  return static_cast<int32_t>(raw ^ sign) - static_cast<int32_t>(sign);
}

// `v` must lie in t's range (callers clamp; b1 takes -1 or +1); other elements of the byte are kept.
inline void store_code(void* data, DType t, int64_t i, int32_t v) {
  auto* p = static_cast<uint8_t*>(data);
  const int b = bit_width(t);
  if (t == DType::b1) v = v < 0 ? 1 : 0;
  if (b == 8) {
    p[i] = static_cast<uint8_t>(v);
    return;
  }
  const int64_t bit = i * b;
  const uint32_t mask = (1u << b) - 1u;
  const int sh = static_cast<int>(bit & 7);
  uint8_t& byte = p[bit >> 3];
  byte = static_cast<uint8_t>((byte & ~(mask << sh)) | ((static_cast<uint32_t>(v) & mask) << sh));
}

// Packed signs: a b1 *activation* (a runtime value, not a constant) of shape [N, C, H, W] is the
// signs of a real-valued tensor in the binary kernels' own layout, channels innermost:
// [N][H][W][C / 64] uint64 words, channel c at bit c % 64 of word c / 64, bit 1 = -1. C % 64 == 0
// (validated), so the bytes are those of any b1 tensor of that shape and the memory plan needs no
// special case; only the order differs from the constants' element order above.
inline constexpr int64_t kSignWordBits = 64;
inline int32_t load_packed_sign(const void* words, int64_t C, int64_t H, int64_t W, int64_t n, int64_t c, int64_t h,
                                int64_t w) {
  const uint64_t word = static_cast<const uint64_t*>(words)[((n * H + h) * W + w) * (C / kSignWordBits) + c / kSignWordBits];
  return (word >> (c % kSignWordBits)) & 1u ? -1 : 1;
}
inline void store_packed_sign(void* words, int64_t C, int64_t H, int64_t W, int64_t n, int64_t c, int64_t h,
                              int64_t w, int32_t v) {
  uint64_t& word = static_cast<uint64_t*>(words)[((n * H + h) * W + w) * (C / kSignWordBits) + c / kSignWordBits];
  const uint64_t bit = uint64_t{1} << (c % kSignWordBits);
  word = v < 0 ? word | bit : word & ~bit;
}

// The same codes in another storage dtype (i8 <-> i4 <-> i2 <-> b1, u8 <-> u4 <-> u2 <-> u1).
// Throws lowbit::Error when a code does not fit `to` (for b1: is not -1 or +1).
Tensor convert_codes(const Tensor& t, DType to);

// True for the integer dtypes whose values are codes (not i32 / i64 / bool).
inline bool is_code_dtype(DType t) {
  switch (t) {
    case DType::u8: case DType::i8: case DType::u4: case DType::i4: case DType::u2: case DType::i2:
    case DType::u1: case DType::b1: return true;
    default: return false;
  }
}

}  // namespace lowbit
