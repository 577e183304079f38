// AVX-VNNI loop of the microbenchmark (loops.h): VEX vpdpbusd ymm, 32 u8 x s8 multiply-adds into 8
// int32 each (kernels/qu8-gemm/avxvnni.cc).
#include <cstdint>

#include "lowbit/microbench/asm_loop.h"
#include "lowbit/microbench/loops.h"

namespace lowbit::microbench {

int64_t qu8_vpdpbusd_ymm_loop(int64_t iters) {
  int64_t n = iters;
#define LB_STEP(acc) "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%" acc "\n\t"
  LOWBIT_ASM_LOOP(n, "vpcmpeqd %%ymm14, %%ymm14, %%ymm14\n\tvpcmpeqd %%ymm15, %%ymm15, %%ymm15\n\t",
                  LB_STEP("ymm0") LB_STEP("ymm1") LB_STEP("ymm2") LB_STEP("ymm3") LB_STEP("ymm4") LB_STEP("ymm5")
                      LB_STEP("ymm6") LB_STEP("ymm7") LB_STEP("ymm8") LB_STEP("ymm9") LB_STEP("ymm10")
                          LB_STEP("ymm11"));
#undef LB_STEP
  return n;
}

}  // namespace lowbit::microbench
