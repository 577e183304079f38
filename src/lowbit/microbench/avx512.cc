// AVX-512 fp32 FMA loop of the microbenchmark (loops.h): 12 independent zmm chains.
#include <cstdint>

#include "lowbit/kernels/simd/f32_vec_avx512.h"
#include "lowbit/microbench/fma_loop_inl.h"
#include "lowbit/microbench/loops.h"

namespace lowbit::microbench {

float f32_fma_zmm_loop(int64_t iters) { return fma_loop<simd::Avx512F>(iters); }

}  // namespace lowbit::microbench
