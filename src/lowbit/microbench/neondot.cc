// ARMv8.2 dot-product loop of the microbenchmark (loops.h): sdot, 16 s8 x s8 multiply-adds into 4
// int32 each (kernels/qu8-gemm/neondot.cc).
#include <cstdint>

#include "lowbit/microbench/asm_loop.h"
#include "lowbit/microbench/loops.h"

namespace lowbit::microbench {

int64_t qs8_sdot_loop(int64_t iters) {
  int64_t n = iters;
#define LB_STEP(acc) "sdot " acc ".4s, v12.16b, v13.16b\n\t"
  LOWBIT_ASM_LOOP(n, "movi v12.16b, #1\n\tmovi v13.16b, #2\n\t",
                  LB_STEP("v0") LB_STEP("v1") LB_STEP("v2") LB_STEP("v3") LB_STEP("v4") LB_STEP("v5") LB_STEP("v6")
                      LB_STEP("v7") LB_STEP("v8") LB_STEP("v9") LB_STEP("v10") LB_STEP("v11"));
#undef LB_STEP
  return n;
}

}  // namespace lowbit::microbench
