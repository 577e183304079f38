#pragma once
// Tensors the tests make from a seed: normal values, the same on every machine (mt19937_64 and
// libstdc++'s normal_distribution).
#include <random>

#include "lowbit/ir/tensor.h"

namespace lowbit::testutil {

inline Tensor normal_tensor(Shape s, uint64_t seed, float scale = 1.0f) {
  Tensor t(DType::f32, std::move(s));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

}  // namespace lowbit::testutil
