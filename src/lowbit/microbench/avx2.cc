// AVX2 loops of the microbenchmark (loops.h): the fp32 FMA and the int8 / 4-bit / 2-bit / binary
// paths lowbit's AVX2 kernels issue (kernels/qu8-gemm, qsub-gemm, qb1-gemm). The integer loops are
// asm: GCC keeps an intrinsic accumulator array partly in memory inside such loops.
#include <cstdint>

#include "lowbit/kernels/simd/f32_vec_avx2.h"
#include "lowbit/microbench/asm_loop.h"
#include "lowbit/microbench/fma_loop_inl.h"
#include "lowbit/microbench/loops.h"

namespace lowbit::microbench {

float f32_fma_ymm_loop(int64_t iters) { return fma_loop<simd::Avx2F>(iters); }

// Constants the integer loops start from: bytes of 1 (small codes), int16 ones, and byte masks.
#define LB_BYTES_OF_1(r) "vpcmpeqd %%" r ", %%" r ", %%" r "\n\tvpabsb %%" r ", %%" r "\n\t"
#define LB_WORDS_OF_1(r) "vpcmpeqw %%" r ", %%" r ", %%" r "\n\tvpabsw %%" r ", %%" r "\n\t"
#define LB_BYTE_MASK(r, shift) \
  "vpcmpeqd %%" r ", %%" r ", %%" r "\n\tvpsrlw $" shift ", %%" r ", %%" r "\n\tvpackuswb %%" r ", %%" r ", %%" r "\n\t"

// The int8 kernels' exact int16 path: activations and weights widened to int16, vpmaddwd
// multiplies 16 pairs into 8 int32 sums, vpaddd accumulates.
int64_t qu8_vpmaddwd_ymm_loop(int64_t iters) {
  int64_t n = iters;
#define LB_STEP(acc, tmp) "vpmaddwd %%ymm14, %%ymm15, %%" tmp "\n\tvpaddd %%" tmp ", %%" acc ", %%" acc "\n\t"
  LOWBIT_ASM_LOOP(n, "vpcmpeqd %%ymm14, %%ymm14, %%ymm14\n\tvpcmpeqd %%ymm15, %%ymm15, %%ymm15\n\t",
                  LB_STEP("ymm0", "ymm12") LB_STEP("ymm1", "ymm13") LB_STEP("ymm2", "ymm12") LB_STEP("ymm3", "ymm13")
                      LB_STEP("ymm4", "ymm12") LB_STEP("ymm5", "ymm13") LB_STEP("ymm6", "ymm12")
                          LB_STEP("ymm7", "ymm13") LB_STEP("ymm8", "ymm12") LB_STEP("ymm9", "ymm13")
                              LB_STEP("ymm10", "ymm12") LB_STEP("ymm11", "ymm13"));
#undef LB_STEP
  return n;
}

// One vpmaddubsw path step: u8 activations (`act`) times s8 codes (`w`) into int16 pair sums,
// widened to int32 by vpmaddwd with ones (ymm15), added into `acc`.
#define LB_MADDUBS(w, act, tmp, acc)                                                                    \
  "vpmaddubsw %%" w ", %%" act ", %%" tmp "\n\tvpmaddwd %%ymm15, %%" tmp ", %%" tmp "\n\tvpaddd %%" tmp \
  ", %%" acc ", %%" acc "\n\t"

// The narrow-code path (4- and 2-bit codes, where u8 x s8 products cannot saturate int16): two
// multiply-port instructions per 32 multiply-adds.
int64_t qu8_vpmaddubsw_ymm_loop(int64_t iters) {
  int64_t n = iters;
  LOWBIT_ASM_LOOP(n, LB_BYTES_OF_1("ymm12") LB_BYTES_OF_1("ymm13") LB_WORDS_OF_1("ymm15"),
                  LB_MADDUBS("ymm12", "ymm13", "ymm8", "ymm0") LB_MADDUBS("ymm12", "ymm13", "ymm9", "ymm1")
                      LB_MADDUBS("ymm12", "ymm13", "ymm10", "ymm2") LB_MADDUBS("ymm12", "ymm13", "ymm11", "ymm3")
                          LB_MADDUBS("ymm12", "ymm13", "ymm8", "ymm4") LB_MADDUBS("ymm12", "ymm13", "ymm9", "ymm5")
                              LB_MADDUBS("ymm12", "ymm13", "ymm10", "ymm6")
                                  LB_MADDUBS("ymm12", "ymm13", "ymm11", "ymm7"));
  return n;
}

// 4-bit weights kept packed: each 32-byte word holds 64 codes; vpand takes the low nibbles,
// vpsrlw + vpand the high ones, and each half runs the vpmaddubsw path.
int64_t qu4_unpack_ymm_loop(int64_t iters) {
  int64_t n = iters;
#define LB_STEP(acc0, acc1)                                                                              \
  "vpand %%ymm14, %%ymm12, %%ymm8\n\tvpsrlw $4, %%ymm12, %%ymm9\n\tvpand %%ymm14, %%ymm9, %%ymm9\n\t" \
      LB_MADDUBS("ymm8", "ymm13", "ymm10", acc0) LB_MADDUBS("ymm9", "ymm13", "ymm11", acc1)
  LOWBIT_ASM_LOOP(n,
                  "vpcmpeqd %%ymm12, %%ymm12, %%ymm12\n\t" LB_BYTES_OF_1("ymm13") LB_WORDS_OF_1("ymm15")
                      LB_BYTE_MASK("ymm14", "12"),
                  LB_STEP("ymm0", "ymm1") LB_STEP("ymm2", "ymm3") LB_STEP("ymm4", "ymm5") LB_STEP("ymm6", "ymm7"));
#undef LB_STEP
  return n;
}

// 2-bit weights kept packed: 128 codes a word, four shift-and-mask unpacks, four vpmaddubsw paths.
int64_t qu2_unpack_ymm_loop(int64_t iters) {
  int64_t n = iters;
#define LB_PART(shift, acc) \
  "vpsrlw $" shift ", %%ymm12, %%ymm8\n\tvpand %%ymm14, %%ymm8, %%ymm8\n\t" LB_MADDUBS("ymm8", "ymm13", "ymm9", acc)
  LOWBIT_ASM_LOOP(n,
                  "vpcmpeqd %%ymm12, %%ymm12, %%ymm12\n\t" LB_BYTES_OF_1("ymm13") LB_WORDS_OF_1("ymm15")
                      LB_BYTE_MASK("ymm14", "14"),
                  LB_PART("0", "ymm0") LB_PART("2", "ymm1") LB_PART("4", "ymm2") LB_PART("6", "ymm3")
                      LB_PART("0", "ymm4") LB_PART("2", "ymm5") LB_PART("4", "ymm6") LB_PART("6", "ymm7"));
#undef LB_PART
  return n;
}
#undef LB_MADDUBS

// Binary: XOR of 256 sign bits, popcount by two 16-entry nibble tables (vpshufb), summed into
// 64-bit lanes with vpsadbw: 256 one-bit multiply-adds a step.
int64_t b1_vpshufb_ymm_loop(int64_t iters) {
  int64_t n = iters;
#define LB_STEP(acc)                                                                                      \
  "vpxor %%ymm13, %%ymm12, %%ymm8\n\tvpand %%ymm14, %%ymm8, %%ymm9\n\tvpsrlw $4, %%ymm8, %%ymm8\n\t"    \
  "vpand %%ymm14, %%ymm8, %%ymm8\n\tvpshufb %%ymm9, %%ymm14, %%ymm9\n\tvpshufb %%ymm8, %%ymm14, %%ymm8\n\t" \
  "vpaddb %%ymm9, %%ymm8, %%ymm8\n\tvpsadbw %%ymm15, %%ymm8, %%ymm8\n\tvpaddq %%ymm8, %%" acc ", %%" acc "\n\t"
  // ymm14: the 0x0f mask, standing in for the table too (its values do not change the speed).
  LOWBIT_ASM_LOOP(n,
                  "vpcmpeqd %%ymm12, %%ymm12, %%ymm12\n\tvpxor %%ymm13, %%ymm13, %%ymm13\n\t" LB_BYTE_MASK("ymm14", "12")
                      "vpxor %%ymm15, %%ymm15, %%ymm15\n\t",
                  LB_STEP("ymm0") LB_STEP("ymm1") LB_STEP("ymm2") LB_STEP("ymm3") LB_STEP("ymm4") LB_STEP("ymm5")
                      LB_STEP("ymm6") LB_STEP("ymm7"));
#undef LB_STEP
  return n;
}

}  // namespace lowbit::microbench
