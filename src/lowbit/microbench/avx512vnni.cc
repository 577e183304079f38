// AVX-512 VNNI loop of the microbenchmark (loops.h): vpdpbusd zmm, 64 u8 x s8 multiply-adds into
// 16 int32 each, the qu8 VNNI kernels' inner step (kernels/qu8-gemm/avx512vnni.cc). Its operands
// sit in zmm30-31, which only AVX-512 flags let GCC name.
#include <cstdint>

#include "lowbit/microbench/asm_loop.h"
#include "lowbit/microbench/loops.h"

namespace lowbit::microbench {

int64_t qu8_vpdpbusd_zmm_loop(int64_t iters) {
  int64_t n = iters;
#define LB_STEP(acc) "vpdpbusd %%zmm30, %%zmm31, %%" acc "\n\t"
  LOWBIT_ASM_LOOP(n, "vpternlogd $0xff, %%zmm30, %%zmm30, %%zmm30\n\tvpternlogd $0xff, %%zmm31, %%zmm31, %%zmm31\n\t",
                  LB_STEP("zmm0") LB_STEP("zmm1") LB_STEP("zmm2") LB_STEP("zmm3") LB_STEP("zmm4") LB_STEP("zmm5")
                      LB_STEP("zmm6") LB_STEP("zmm7") LB_STEP("zmm8") LB_STEP("zmm9") LB_STEP("zmm10")
                          LB_STEP("zmm11") LB_STEP("zmm12") LB_STEP("zmm13") LB_STEP("zmm14") LB_STEP("zmm15"),
                  "xmm30", "xmm31");
#undef LB_STEP
  return n;
}

}  // namespace lowbit::microbench
