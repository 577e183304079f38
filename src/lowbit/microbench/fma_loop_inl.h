#pragma once
// The fp32 FMA loop, written once over the kernels' fp32 vector traits (kernels/simd/README.md):
// 12 independent chains, enough to cover FMA latency (4-5 cycles) times two units.
#include <cstdint>

namespace lowbit::microbench {

template <class F>
float fma_loop(int64_t iters) {
  typename F::Vec acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = F::set1(static_cast<float>(i) * 1e-3f);
  const typename F::Vec a = F::set1(0.999999f), b = F::set1(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = F::fma(acc[i], a, b);
  }
  typename F::Vec s = acc[0];
  for (int i = 1; i < 12; ++i) s = F::add(s, acc[i]);
  float out[F::kLanes];
  F::store(out, s);
  return out[0] + out[F::kLanes - 1];
}

}  // namespace lowbit::microbench
