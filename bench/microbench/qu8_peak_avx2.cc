// int16 vpmaddwd peak loop (the AVX2 qu8 kernels' multiply): per step 12 products, each added
// into its own accumulator with vpaddd, as the micro-kernel issues them. Written in asm: GCC keeps
// an intrinsic accumulator array partly in memory inside such a loop, which would measure stores.
#include <cstdint>

int64_t qu8_dot_peak_loop__avx2(int64_t iters) {
  int64_t n = iters;
  asm volatile(
      "vpxor %%ymm0, %%ymm0, %%ymm0\n\t"
      "vpcmpeqd %%ymm14, %%ymm14, %%ymm14\n\t"
      "vpcmpeqd %%ymm15, %%ymm15, %%ymm15\n\t"
      "1:\n\t"
#define LB_STEP(acc, tmp) "vpmaddwd %%ymm14, %%ymm15, %%" tmp "\n\tvpaddd %%" tmp ", %%" acc ", %%" acc "\n\t"
      LB_STEP("ymm0", "ymm12") LB_STEP("ymm1", "ymm13") LB_STEP("ymm2", "ymm12") LB_STEP("ymm3", "ymm13")
      LB_STEP("ymm4", "ymm12") LB_STEP("ymm5", "ymm13") LB_STEP("ymm6", "ymm12") LB_STEP("ymm7", "ymm13")
      LB_STEP("ymm8", "ymm12") LB_STEP("ymm9", "ymm13") LB_STEP("ymm10", "ymm12") LB_STEP("ymm11", "ymm13")
#undef LB_STEP
      "dec %0\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : "+r"(n)
      :
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
        "xmm13", "xmm14", "xmm15", "cc");
  return n;
}
