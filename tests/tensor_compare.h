#pragma once
// Comparisons of f32 output tensors shared by the tests.
#include <cmath>
#include <cstdint>

#include "lowbit/ir/tensor.h"

namespace lowbit::testutil {

// Cosine similarity of two f32 tensors of the same size.
inline double cosine(const Tensor& a, const Tensor& b) {
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    dot += x * y, na += x * x, nb += y * y;
  }
  return dot / std::sqrt(na * nb);
}

// How many elements differ at all.
inline int64_t count_different(const Tensor& a, const Tensor& b) {
  int64_t n = 0;
  for (int64_t i = 0; i < a.numel(); ++i) n += a.data<float>()[i] != b.data<float>()[i];
  return n;
}

}  // namespace lowbit::testutil
