#pragma once
// The frame every asm loop of the microbenchmark shares (loops.h): `setup` once, then `body`
// `n` times with n counting down in a register; every vector register a loop may use is
// clobbered (more than a loop touches costs nothing here).
#if defined(__x86_64__)
#define LOWBIT_VEC_CLOBBERS                                                                                  \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
      "xmm13", "xmm14", "xmm15"
#define LOWBIT_ASM_LOOP(n, setup, body, ...)                                                    \
  asm volatile(setup "1:\n\t" body "dec %0\n\tjnz 1b\n\tvzeroupper\n\t"                          \
               : "+r"(n)                                                                        \
               :                                                                                \
               : LOWBIT_VEC_CLOBBERS, ##__VA_ARGS__, "cc")
#elif defined(__aarch64__)
#define LOWBIT_VEC_CLOBBERS                                                                                   \
  "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15"
#define LOWBIT_ASM_LOOP(n, setup, body, ...)                                                    \
  asm volatile(setup "1:\n\t" body "subs %0, %0, #1\n\tb.ne 1b\n\t"                              \
               : "+r"(n)                                                                        \
               :                                                                                \
               : LOWBIT_VEC_CLOBBERS, ##__VA_ARGS__, "cc")
#endif
