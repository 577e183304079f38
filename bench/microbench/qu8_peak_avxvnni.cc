// VEX vpdpbusd (ymm) peak loop: 12 independent accumulators (asm, as qu8_peak_avx2.cc).
#include <cstdint>

int64_t qu8_dot_peak_loop__avxvnni(int64_t iters) {
  int64_t n = iters;
  asm volatile(
      "vpcmpeqd %%ymm14, %%ymm14, %%ymm14\n\t"
      "vpcmpeqd %%ymm15, %%ymm15, %%ymm15\n\t"
      "1:\n\t"
#define LB_STEP(acc) "%{vex%} vpdpbusd %%ymm14, %%ymm15, %%" acc "\n\t"
      LB_STEP("ymm0") LB_STEP("ymm1") LB_STEP("ymm2") LB_STEP("ymm3") LB_STEP("ymm4") LB_STEP("ymm5")
      LB_STEP("ymm6") LB_STEP("ymm7") LB_STEP("ymm8") LB_STEP("ymm9") LB_STEP("ymm10") LB_STEP("ymm11")
#undef LB_STEP
      "dec %0\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : "+r"(n)
      :
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm14",
        "xmm15", "cc");
  return n;
}
