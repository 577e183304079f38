// AVX-512 VPOPCNTDQ binary loop of the microbenchmark (loops.h): XOR of 512 sign bits and
// vpopcntq, the qb1 AVX-512 kernels' inner step (kernels/qb1-gemm/avx512popcnt.cc).
#include <cstdint>

#include "lowbit/microbench/asm_loop.h"
#include "lowbit/microbench/loops.h"

namespace lowbit::microbench {

int64_t b1_vpopcntq_zmm_loop(int64_t iters) {
  int64_t n = iters;
#define LB_STEP(acc, tmp) \
  "vpxorq %%zmm13, %%zmm12, %%" tmp "\n\tvpopcntq %%" tmp ", %%" tmp "\n\tvpaddq %%" tmp ", %%" acc ", %%" acc "\n\t"
  LOWBIT_ASM_LOOP(n, "vpternlogd $0xff, %%zmm12, %%zmm12, %%zmm12\n\tvpxorq %%zmm13, %%zmm13, %%zmm13\n\t",
                  LB_STEP("zmm0", "zmm8") LB_STEP("zmm1", "zmm9") LB_STEP("zmm2", "zmm10") LB_STEP("zmm3", "zmm11")
                      LB_STEP("zmm4", "zmm8") LB_STEP("zmm5", "zmm9") LB_STEP("zmm6", "zmm10")
                          LB_STEP("zmm7", "zmm11"));
#undef LB_STEP
  return n;
}

}  // namespace lowbit::microbench
