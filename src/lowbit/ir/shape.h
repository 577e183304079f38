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

// "1x3x224x224"; a scalar prints as "scalar".
inline std::string shape_str(const Shape& s) {
  if (s.empty()) return "scalar";
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

}  // namespace lowbit
