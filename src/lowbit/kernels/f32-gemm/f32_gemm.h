#pragma once
// fp32 GEMM micro-kernels and the im2col packer that feeds them.
//
// A micro-kernel computes one MR x NR tile of C = A * B over kc steps:
//   a: kc x MR (MR floats per k: one column of A^T per step), any alignment
//   b: kc x NR (NR floats per k, zero padded past nc), 32-byte aligned
//   acc[r][j] = sum_k a[k*MR + r] * b[k*NR + j] + init[r*ld_init + j] + row_bias[r] + col_bias[j]
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

// One run of a B panel's columns (output pixels) whose sources are evenly spaced in the input:
// column dst + i of row k reads x[koff[k] + src + i * stride].
struct F32Im2colRun {
  int64_t src;
  int32_t dst;
  int32_t len;
};

// Packs kc rows of one B panel (kc x nr, row k at b + k*nr) from x through the per-row offsets
// koff; columns not covered by any run (past the last pixel) are zeroed. No bounds checks: x is
// already padded, so every addressed element exists.
void f32_im2col_pack__avx2(size_t kc, const float* x, const int64_t* koff, const F32Im2colRun* runs, size_t nruns,
                           size_t stride, size_t nr, float* b);

}  // namespace lowbit
