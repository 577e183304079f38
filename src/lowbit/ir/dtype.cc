#include "lowbit/ir/dtype.h"

#include <array>

namespace lowbit {
namespace {
constexpr std::array<DTypeInfo, 12> kInfo = {{
    {DType::f32, "f32", 32, true, true, 0, 0},
    {DType::i64, "i64", 64, true, false, INT64_MIN, INT64_MAX},
    {DType::i32, "i32", 32, true, false, INT32_MIN, INT32_MAX},
    {DType::u8, "u8", 8, false, false, 0, 255},
    {DType::i8, "i8", 8, true, false, -128, 127},
    {DType::u4, "u4", 4, false, false, 0, 15},
    {DType::i4, "i4", 4, true, false, -8, 7},
    {DType::u2, "u2", 2, false, false, 0, 3},
    {DType::i2, "i2", 2, true, false, -2, 1},
    {DType::b1, "b1", 1, true, false, -1, 1},
    {DType::boolean, "bool", 8, false, false, 0, 1},
    {DType::u1, "u1", 1, false, false, 0, 1},
}};
}  // namespace

const DTypeInfo& dtype_info(DType t) { return kInfo[static_cast<size_t>(t)]; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kInfo)
    if (name == i.name) return i.dtype;
  return std::nullopt;
}

int64_t storage_bytes(DType t, int64_t count) { return (count * bit_width(t) + 7) / 8; }

}  // namespace lowbit
