#pragma once
// The microbenchmark's loops (microbench.h): each runs `iters` iterations of a fixed block of
// independent multiply-adds (or loads) in one instruction path and returns something the caller
// keeps, so that nothing is optimised away. Written in asm where GCC would keep an accumulator
// array in memory, which would measure stores. One file per ISA, compiled with its flags
// (cmake/isa.cmake); the table in microbench.cc says what one iteration does.
#include <cstdint>

namespace lowbit::microbench {

// Baseline code of the build's architecture (portable.cc).
float scalar_f32_loop(int64_t iters);    // 8 chains of a = a * m + c (a multiply and an add each)
int64_t scalar_i32_loop(int64_t iters);  // 8 chains of a = a * m + c on 32-bit integers
int64_t add_chain_loop(int64_t iters);   // 16 dependent 1-cycle adds: the clock
// Sums `bytes` bytes (a multiple of 256) of `data` `passes` times: read bandwidth.
uint64_t read_loop(const uint64_t* data, int64_t bytes, int64_t passes);

#if defined(__x86_64__)
float f32_fma_ymm_loop(int64_t iters);           // avx2.cc: 12 x vfmadd ymm (8 lanes)
int64_t qu8_vpmaddwd_ymm_loop(int64_t iters);    // 12 x (vpmaddwd + vpaddd): int16 pairs, 16 MACs each
int64_t qu8_vpmaddubsw_ymm_loop(int64_t iters);  // 8 x (vpmaddubsw + vpmaddwd 1s + vpaddd): 32 u8 x s8 MACs
int64_t qu4_unpack_ymm_loop(int64_t iters);      // 4 x (2 nibble unpacks + 2 vpmaddubsw paths): 64 MACs
int64_t qu2_unpack_ymm_loop(int64_t iters);      // 2 x (4 crumb unpacks + 4 vpmaddubsw paths): 128 MACs
int64_t b1_vpshufb_ymm_loop(int64_t iters);      // 8 x (vpxor, nibble-table popcount, vpsadbw): 256 bits
float f32_fma_zmm_loop(int64_t iters);           // avx512.cc: 12 x vfmadd zmm (16 lanes)
int64_t b1_vpopcntq_zmm_loop(int64_t iters);     // avx512popcnt.cc: 8 x (vpxorq + vpopcntq + vpaddq): 512 bits
int64_t qu8_vpdpbusd_zmm_loop(int64_t iters);    // avx512vnni.cc: 16 x vpdpbusd zmm (64 MACs)
int64_t qu8_vpdpbusd_ymm_loop(int64_t iters);    // avxvnni.cc: 12 x {vex} vpdpbusd ymm (32 MACs)
#elif defined(__aarch64__)
float f32_fmla_loop(int64_t iters);           // neon.cc: 12 x fmla .4s
int64_t qs8_smlal_loop(int64_t iters);        // 6 x (smlal + smlal2 .4s from .8h): int16 operands, 8 MACs
int64_t qs8_smull_sadalp_loop(int64_t iters); // 4 x (smull + smull2 .8h from .16b, 2 x sadalp): 16 MACs
int64_t qs4_unpack_loop(int64_t iters);       // 2 x (2 nibble unpacks + 2 smull/smull2/sadalp paths): 64 MACs
int64_t qs2_unpack_loop(int64_t iters);       // 4 crumb unpacks + 4 smull/smull2/sadalp paths: 64 MACs
int64_t b1_cnt_loop(int64_t iters);           // 8 x (eor + cnt .16b + uadalp): 128 bits
int64_t qs8_sdot_loop(int64_t iters);         // neondot.cc: 12 x sdot .4s (16 MACs)
#endif

}  // namespace lowbit::microbench
