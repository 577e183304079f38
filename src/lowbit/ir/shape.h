#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lowbit {

using Shape = std::vector<int64_t>;

inline int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// The most bytes one tensor may take (64 TiB): past any machine lowbit runs on, and small enough
// that byte counts, offsets and sums of them over a graph's values stay far inside int64_t.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 46;

// Elements of a shape, or -1 when a dim is negative or the product of its non-zero dims overflows
// 63 bits (a hostile model declaring 2^31 x 2^31 x ... must be refused, not wrapped around into a
// small allocation; nor may a zero dim hide dims whose partial products overflow later).
inline int64_t checked_num_elements(const Shape& s) {
  int64_t n = 1;
  bool empty = false;
  for (int64_t d : s) {
    if (d < 0) return -1;
    if (d == 0) empty = true;
    else if (__builtin_mul_overflow(n, d, &n)) return -1;
  }
  return empty ? 0 : n;
}

// "1x3x224x224"; a scalar prints as "scalar".
inline std::string shape_str(const Shape& s) {
  if (s.empty()) return "scalar";
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

}  // namespace lowbit
