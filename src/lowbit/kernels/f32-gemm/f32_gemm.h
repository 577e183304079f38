#pragma once
// fp32 GEMM micro-kernels and the im2col packer that feeds them.
//
// A micro-kernel computes one MR x NR tile of C = A * B over kc steps:
//   a: kc x MR (MR floats per k: one column of A^T per step), any alignment
//   b: kc x NR (NR floats per k, zero padded past nc), 32-byte aligned; or, with e.ldb set, rows
//      ldb floats apart, any alignment, every one of the NR columns readable (an unpacked 1x1 conv
//      input read in place)
//   acc[r][j] = sum_k a[k*MR + r] * b[k*ldb + j] + init[r*ld_init + j] + row_bias[r] + col_bias[j]
//   c[r*ldc + j] = min(max(acc, min), max) for r < MR, j < nc (nc <= NR; columns past nc untouched)
// `init` may alias `c` (accumulating over K blocks). Every term is optional (nullptr).
#include <cstddef>
#include <cstdint>
#include <limits>

namespace lowbit {

struct F32GemmEpilogue {
  const float* init = nullptr;
  size_t ld_init = 0;
  const float* row_bias = nullptr;  // MR values
  const float* col_bias = nullptr;  // NR values (readable past nc)
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
  // Optional: cache lines to pull into L2 while the tile runs, one per k step from `prefetch` (at
  // most kc of them), so a caller can spread the next weight panel's fetch over the tiles that
  // reuse the current one. Kernels may ignore it.
  const float* prefetch = nullptr;
  size_t prefetch_lines = 0;
  // B's row stride in floats; 0: NR (a packed panel).
  size_t ldb = 0;
};

using F32GemmUkernel = void (*)(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc,
                                const F32GemmEpilogue& e);

void f32_gemm_1x16__avx2(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc,
                         const F32GemmEpilogue& e);
void f32_gemm_2x16__avx2(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc,
                         const F32GemmEpilogue& e);
void f32_gemm_3x16__avx2(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc,
                         const F32GemmEpilogue& e);
void f32_gemm_4x16__avx2(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc,
                         const F32GemmEpilogue& e);
void f32_gemm_5x16__avx2(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc,
                         const F32GemmEpilogue& e);
void f32_gemm_6x16__avx2(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc,
                         const F32GemmEpilogue& e);
void f32_gemm_1x8__avx2(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc,
                        const F32GemmEpilogue& e);
void f32_gemm_2x8__avx2(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc,
                        const F32GemmEpilogue& e);
void f32_gemm_3x8__avx2(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc,
                        const F32GemmEpilogue& e);
void f32_gemm_4x8__avx2(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc,
                        const F32GemmEpilogue& e);
void f32_gemm_5x8__avx2(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc,
                        const F32GemmEpilogue& e);
void f32_gemm_6x8__avx2(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc,
                        const F32GemmEpilogue& e);

// AVX-512 (kernels/f32-gemm/avx512.cc): the same contract on zmm, MR x 32 and MR x 16 tiles for
// MR = 1..14 (b any alignment; packed panels are 64-byte aligned). X(MR, NR) for each tile.
#define LOWBIT_F32_GEMM_AVX512_TILES(X)                                                                       \
  X(1, 32) X(2, 32) X(3, 32) X(4, 32) X(5, 32) X(6, 32) X(7, 32) X(8, 32) X(9, 32) X(10, 32) X(11, 32) X(12, 32) \
  X(13, 32) X(14, 32) X(1, 16) X(2, 16) X(3, 16) X(4, 16) X(5, 16) X(6, 16) X(7, 16) X(8, 16) X(9, 16)          \
  X(10, 16) X(11, 16) X(12, 16) X(13, 16) X(14, 16)
#define LOWBIT_F32_GEMM_DECLARE_AVX512(MR, NR)                                                                     \
  void f32_gemm_##MR##x##NR##__avx512(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc, \
                                      const F32GemmEpilogue& e);
LOWBIT_F32_GEMM_AVX512_TILES(LOWBIT_F32_GEMM_DECLARE_AVX512)
#undef LOWBIT_F32_GEMM_DECLARE_AVX512

// One run of a B panel's columns (output pixels) whose sources are evenly spaced in the input:
// column dst + i of row k reads x[koff[k] + src + i * stride].
struct F32Im2colRun {
  int64_t src;
  int32_t dst;
  int32_t len;
};

// Packs kc rows of one B panel (kc x nr, row k at b + k*nr) from x through the per-row offsets
// koff; runs are in column order and cover columns [0, covered); columns past that are zeroed. No
// bounds checks: x is already padded, so every addressed element exists; reads only those.
void f32_im2col_pack__avx2(size_t kc, const float* x, const int64_t* koff, const F32Im2colRun* runs, size_t nruns,
                           size_t stride, size_t nr, float* b);

// 32-wide panels (stride 1 and 2 vectorised with masks: reads only addressed elements).
void f32_im2col_pack__avx512(size_t kc, const float* x, const int64_t* koff, const F32Im2colRun* runs, size_t nruns,
                             size_t stride, size_t nr, float* b);

// The channels-on-lanes conv's write-back: y[m * ldy + q] = clamp(ct[q * ldc + m] (+ res[m * ldy + q]))
// for q < np, m < nc (res optional): a pixels x channels tile to channel-major rows.
void f32_transpose_store__avx512(size_t np, size_t nc, const float* ct, size_t ldc, const float* res, float* y,
                                 size_t ldy, float min, float max);

// AArch64 Advanced SIMD (kernels/f32-gemm/neon.cc): the same contracts, fmla on 4-lane vectors.
#define LOWBIT_F32_GEMM_DECLARE(MR, NR)                                                                          \
  void f32_gemm_##MR##x##NR##__neon(size_t nc, size_t kc, const float* a, const float* b, float* c, size_t ldc, \
                                    const F32GemmEpilogue& e);
LOWBIT_F32_GEMM_DECLARE(1, 16)
LOWBIT_F32_GEMM_DECLARE(2, 16)
LOWBIT_F32_GEMM_DECLARE(3, 16)
LOWBIT_F32_GEMM_DECLARE(4, 16)
LOWBIT_F32_GEMM_DECLARE(5, 16)
LOWBIT_F32_GEMM_DECLARE(6, 16)
LOWBIT_F32_GEMM_DECLARE(1, 8)
LOWBIT_F32_GEMM_DECLARE(2, 8)
LOWBIT_F32_GEMM_DECLARE(3, 8)
LOWBIT_F32_GEMM_DECLARE(4, 8)
LOWBIT_F32_GEMM_DECLARE(5, 8)
LOWBIT_F32_GEMM_DECLARE(6, 8)
#undef LOWBIT_F32_GEMM_DECLARE
void f32_im2col_pack__neon(size_t kc, const float* x, const int64_t* koff, const F32Im2colRun* runs, size_t nruns,
                           size_t stride, size_t nr, float* b);

}  // namespace lowbit
