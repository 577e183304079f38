// EVEX vpdpbusd (zmm) peak loop: 16 independent accumulators (asm, as qu8_peak_avx2.cc).
#include <cstdint>

int64_t qu8_dot_peak_loop__avx512vnni(int64_t iters) {
  int64_t n = iters;
  asm volatile(
      "vpternlogd $0xff, %%zmm30, %%zmm30, %%zmm30\n\t"
      "vpternlogd $0xff, %%zmm31, %%zmm31, %%zmm31\n\t"
      "1:\n\t"
#define LB_STEP(acc) "vpdpbusd %%zmm30, %%zmm31, %%" acc "\n\t"
      LB_STEP("zmm0") LB_STEP("zmm1") LB_STEP("zmm2") LB_STEP("zmm3") LB_STEP("zmm4") LB_STEP("zmm5")
      LB_STEP("zmm6") LB_STEP("zmm7") LB_STEP("zmm8") LB_STEP("zmm9") LB_STEP("zmm10") LB_STEP("zmm11")
      LB_STEP("zmm12") LB_STEP("zmm13") LB_STEP("zmm14") LB_STEP("zmm15")
#undef LB_STEP
      "dec %0\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : "+r"(n)
      :
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
        "xmm13", "xmm14", "xmm15", "xmm30", "xmm31", "cc");
  return n;
}
