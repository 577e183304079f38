// NEON loops of the microbenchmark (loops.h): fp32 FMA and the int8 / 4-bit / binary paths of
// lowbit's ARMv8.0 kernels (kernels/qu8-gemm/neon.cc, qsub-gemm, qb1-gemm).
#include <cstdint>

#include "lowbit/kernels/simd/f32_vec_neon.h"
#include "lowbit/microbench/asm_loop.h"
#include "lowbit/microbench/fma_loop_inl.h"
#include "lowbit/microbench/loops.h"

namespace lowbit::microbench {

float f32_fmla_loop(int64_t iters) { return fma_loop<simd::NeonF>(iters); }

// The int8 kernels' exact int16 path on ARMv8.0: widened operands, smlal / smlal2 (4 + 4 int16
// products into int32).
int64_t qs8_smlal_loop(int64_t iters) {
  int64_t n = iters;
#define LB_STEP(a0, a1) "smlal " a0 ".4s, v12.4h, v13.4h\n\tsmlal2 " a1 ".4s, v12.8h, v13.8h\n\t"
  LOWBIT_ASM_LOOP(n, "movi v12.8h, #1\n\tmovi v13.8h, #2\n\t",
                  LB_STEP("v0", "v1") LB_STEP("v2", "v3") LB_STEP("v4", "v5") LB_STEP("v6", "v7") LB_STEP("v8", "v9")
                      LB_STEP("v10", "v11"));
#undef LB_STEP
  return n;
}

// One narrow-code step: smull / smull2 multiply 8 + 8 byte pairs (`x` by v13) into int16, sadalp
// adds pairs into the int32 accumulators.
#define LB_SMULL(x, a0, a1) \
  "smull v10.8h, " x ".8b, v13.8b\n\tsmull2 v11.8h, " x ".16b, v13.16b\n\tsadalp " a0 ".4s, v10.8h\n\tsadalp " a1 ".4s, v11.8h\n\t"

// The narrow-code path (sub-byte codes: 8-bit products fit int16).
int64_t qs8_smull_sadalp_loop(int64_t iters) {
  int64_t n = iters;
  LOWBIT_ASM_LOOP(n, "movi v12.16b, #1\n\tmovi v13.16b, #2\n\t",
                  LB_SMULL("v12", "v0", "v1") LB_SMULL("v12", "v2", "v3") LB_SMULL("v12", "v4", "v5")
                      LB_SMULL("v12", "v6", "v7"));
  return n;
}

// 4-bit weights kept packed: and / ushr unpack 32 codes from 16 bytes, then the smull path on each half.
int64_t qs4_unpack_loop(int64_t iters) {
  int64_t n = iters;
#define LB_STEP(a0, a1, a2, a3) \
  "and v8.16b, v12.16b, v14.16b\n\tushr v9.16b, v12.16b, #4\n\t" LB_SMULL("v8", a0, a1) LB_SMULL("v9", a2, a3)
  LOWBIT_ASM_LOOP(n, "movi v12.16b, #0x5a\n\tmovi v13.16b, #2\n\tmovi v14.16b, #0x0f\n\t",
                  LB_STEP("v0", "v1", "v2", "v3") LB_STEP("v4", "v5", "v6", "v7"));
#undef LB_STEP
  return n;
}
// 2-bit weights kept packed: ushr + and unpack 64 codes from 16 bytes (shifts 0, 2, 4, 6), then
// the smull path on each quarter.
int64_t qs2_unpack_loop(int64_t iters) {
  int64_t n = iters;
#define LB_PART(shift, a0, a1) "ushr v8.16b, v12.16b, #" shift "\n\tand v8.16b, v8.16b, v14.16b\n\t" LB_SMULL("v8", a0, a1)
  LOWBIT_ASM_LOOP(n, "movi v12.16b, #0x5a\n\tmovi v13.16b, #2\n\tmovi v14.16b, #0x03\n\t",
                  "and v8.16b, v12.16b, v14.16b\n\t" LB_SMULL("v8", "v0", "v1") LB_PART("2", "v2", "v3")
                      LB_PART("4", "v4", "v5") LB_PART("6", "v6", "v7"));
#undef LB_PART
  return n;
}
#undef LB_SMULL

// Binary: eor of 128 sign bits, cnt per byte, uadalp into 16-bit lanes (kernels/qb1-gemm/neon.cc).
int64_t b1_cnt_loop(int64_t iters) {
  int64_t n = iters;
#define LB_STEP(acc, t) "eor " t ".16b, v12.16b, v13.16b\n\tcnt " t ".16b, " t ".16b\n\tuadalp " acc ".8h, " t ".16b\n\t"
  LOWBIT_ASM_LOOP(n, "movi v12.16b, #0xff\n\tmovi v13.16b, #0\n\t",
                  LB_STEP("v0", "v8") LB_STEP("v1", "v9") LB_STEP("v2", "v10") LB_STEP("v3", "v11") LB_STEP("v4", "v8")
                      LB_STEP("v5", "v9") LB_STEP("v6", "v10") LB_STEP("v7", "v11"));
#undef LB_STEP
  return n;
}

}  // namespace lowbit::microbench
