#pragma once
// A precision: the code types of a quantized layer's weights and input activations. The names
// every command takes with --precision:
//   fp32                       no quantization
//   int8 = w8a8                i8 weights, u8 activations
//   wNaM, N, M in {8, 4, 2}    N-bit signed weights, M-bit unsigned activations (w4a8, w2a2, ...)
//   int4 = w4a4, int2 = w2a2   the study's `nbit` (both sides)
//   w1a1 = binary = int1       b1 (+-1) weights, u1 ({0, 1}) activations: XOR-popcount kernels
#include <string>
#include <string_view>

#include "lowbit/ir/dtype.h"

namespace lowbit {

struct Precision {
  DType weight = DType::f32;  // f32 (not quantized), i8, i4, i2, b1
  DType act = DType::f32;     // f32, u8, u4, u2, u1

  bool quantized() const { return weight != DType::f32; }
  int weight_bits() const { return bit_width(weight); }
  int act_bits() const { return bit_width(act); }
  bool subbyte() const { return quantized() && (weight_bits() < 8 || act_bits() < 8); }
  // "fp32", "int8", "w4a8", ... (int8 for w8a8: the name artifacts and reports have always used)
  std::string name() const;
  bool operator==(const Precision&) const = default;
};

inline constexpr Precision kFp32{};
inline constexpr Precision kInt8{DType::i8, DType::u8};

// Throws lowbit::Error listing the accepted forms.
Precision parse_precision(std::string_view s);
// The signed weight / unsigned activation code type of a width (8, 4, 2 or 1); throws otherwise.
DType weight_code_for_bits(int bits);
DType act_code_for_bits(int bits);
// What --precision accepts, for help texts and errors.
const char* precision_help();

}  // namespace lowbit
