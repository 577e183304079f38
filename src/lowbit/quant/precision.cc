#include "lowbit/quant/precision.h"

#include "lowbit/common/error.h"

namespace lowbit {

const char* precision_help() {
  return "fp32, int8, wNaM with N, M in {8, 4, 2} (w4a8, w4a4, w2a8, w2a2, ...), int4 (= w4a4), int2 (= w2a2), "
         "w1a1 (= binary = int1)";
}

DType weight_code_for_bits(int bits) {
  switch (bits) {
    case 8: return DType::i8;
    case 4: return DType::i4;
    case 2: return DType::i2;
    case 1: return DType::b1;
  }
  throw Error("weight bits must be 8, 4, 2 or 1 (got " + std::to_string(bits) + ")");
}

DType act_code_for_bits(int bits) {
  switch (bits) {
    case 8: return DType::u8;
    case 4: return DType::u4;
    case 2: return DType::u2;
    case 1: return DType::u1;
  }
  throw Error("activation bits must be 8, 4, 2 or 1 (got " + std::to_string(bits) + ")");
}

std::string Precision::name() const {
  if (!quantized()) return "fp32";
  if (weight == DType::i8 && act == DType::u8) return "int8";
  return "w" + std::to_string(weight_bits()) + "a" + std::to_string(act_bits());
}

Precision parse_precision(std::string_view s) {
  auto bad = [&]() -> Error {
    return Error("unknown precision '" + std::string(s) + "': expected " + precision_help());
  };
  if (s == "fp32") return kFp32;
  if (s == "int8") return kInt8;
  if (s == "int4") return {DType::i4, DType::u4};
  if (s == "int2") return {DType::i2, DType::u2};
  if (s == "w1a1" || s == "binary" || s == "int1") return {DType::b1, DType::u1};
  // wNaM
  if (s.size() != 4 || s[0] != 'w' || s[2] != 'a') throw bad();
  auto digit = [&](char c) -> int {
    if (c == '1')  // the binary kernels are XNOR on both sides; one side alone has no kernel that pays
      throw Error("precision '" + std::string(s) + "': 1 bit is w1a1 only (binary weights and activations)");
    if (c != '8' && c != '4' && c != '2') throw bad();
    return c - '0';
  };
  return {weight_code_for_bits(digit(s[1])), act_code_for_bits(digit(s[3]))};
}

}  // namespace lowbit
