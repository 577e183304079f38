// The AVX-512 fp32 micro-kernels and im2col packer against scalar sums, tile by tile (the conv,
// Gemm and MatMul drivers on top of them are checked against the reference kernels over odd
// shapes in f32_kernels_test.cc). Skipped on hosts without AVX-512.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "lowbit/kernels/f32-gemm/f32_gemm.h"
#include "lowbit/operators/conv2d_f32.h"
#include "lowbit/target/target.h"

namespace lowbit {
namespace {

#if defined(__x86_64__)
bool host_has_avx512() {
  const Target t = host_target();
  return t.arch == Arch::x86_64 && t.has(Feature::avx512f) && t.has(Feature::avx512bw);
}

TEST(F32Avx512, MicroKernelsMatchScalarSums) {
  if (!host_has_avx512()) GTEST_SKIP() << "host lacks avx512f/avx512bw";
  const F32GemmKernels& ks = f32_gemm_kernels_avx512();
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  constexpr size_t ldc = 40;
  for (int nr : {ks.nr, ks.nr_tail})
    for (int mr = 1; mr <= ks.mr; ++mr)
      for (size_t kc : {1, 2, 3, 17, 64, 300})
        for (size_t nc : {size_t(1), size_t(7), size_t(15), size_t(16), size_t(17), size_t(nr - 1), size_t(nr)}) {
          if (nc > size_t(nr)) continue;
          for (int variant = 0; variant < 5; ++variant) {
            std::vector<float> a(kc * mr), rb(mr), cb(nr), c(mr * ldc);
            // B is 64-byte aligned in the drivers (packed panels): keep it so here. Variant 4 reads
            // it in place (rows ldb apart, 4 bytes off alignment), as a 1x1 conv reads its input.
            const size_t ldb = variant == 4 ? size_t(nr) + 5 : size_t(nr);
            std::vector<float, std::allocator<float>> bstore(kc * ldb + 17);
            float* b = bstore.data() + (16 - (reinterpret_cast<uintptr_t>(bstore.data()) / 4) % 16) % 16 + (variant == 4);
            for (float& v : a) v = d(rng);
            for (size_t i = 0; i < kc * ldb; ++i) b[i] = d(rng);
            for (float& v : rb) v = d(rng);
            for (float& v : cb) v = d(rng);
            for (float& v : c) v = d(rng);
            const std::vector<float> c0 = c;
            F32GemmEpilogue e;
            if (variant >= 1) {  // accumulate into c (init aliases c), both biases
              e.init = c.data();
              e.ld_init = ldc;
              e.row_bias = rb.data();
              e.col_bias = cb.data();
            }
            if (variant >= 2) e.min = -0.5f, e.max = 0.25f;
            // Prefetch hints (more lines than k steps: the rest are left) must not change results.
            std::vector<float> pf((2 * kc + 3) * 16);
            if (variant == 3) e.prefetch = pf.data(), e.prefetch_lines = 2 * kc + 3;
            if (variant == 4) e.ldb = ldb;
            (nr == ks.nr ? ks.main : ks.tail)[mr](nc, kc, a.data(), b, c.data(), ldc, e);
            for (int r = 0; r < mr; ++r)
              for (size_t j = 0; j < ldc; ++j) {
                const float got = c[r * ldc + j];
                if (j >= nc) {
                  ASSERT_EQ(got, c0[r * ldc + j]) << "column past nc: mr " << mr << " nr " << nr << " nc " << nc;
                  continue;
                }
                double want = 0;
                for (size_t k = 0; k < kc; ++k) want += double(a[k * mr + r]) * b[k * ldb + j];
                if (variant >= 1) want += double(c0[r * ldc + j]) + rb[r] + cb[j];
                if (variant >= 2) want = std::min(std::max(want, -0.5), 0.25);
                ASSERT_NEAR(got, want, 1e-5 * (1.0 + double(kc)))
                    << "mr " << mr << " nr " << nr << " kc " << kc << " nc " << nc << " variant " << variant;
              }
          }
        }
}

TEST(F32Avx512, Im2colPackCopiesRunsAndZeroesTheRest) {
  if (!host_has_avx512()) GTEST_SKIP() << "host lacks avx512f/avx512bw";
  const F32GemmKernels& ks = f32_gemm_kernels_avx512();
  const int64_t koff[3] = {0, 70, 141};
  for (size_t stride : {1, 2, 3})
    for (int32_t len : {32, 31, 17, 16, 15, 5, 1}) {
      const int32_t first = std::min(len, 13);
      const F32Im2colRun runs[2] = {{7, 0, first}, {300, first, len - first}};
      const size_t nruns = len > first ? 2 : 1;
      const size_t nr = len > ks.nr_tail ? size_t(ks.nr) : size_t(ks.nr_tail);
      // x ends right after the last element a run addresses: any read past it is out of bounds
      // (caught by the sanitizer build).
      int64_t last = 0;
      for (size_t s = 0; s < nruns; ++s)
        if (runs[s].len > 0) last = std::max(last, runs[s].src + koff[2] + int64_t(stride) * (runs[s].len - 1));
      std::vector<float> x(static_cast<size_t>(last + 1));
      for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
      std::vector<float> bstore(3 * nr + 16, -1.0f);
      float* b = bstore.data() + (16 - (reinterpret_cast<uintptr_t>(bstore.data()) / 4) % 16) % 16;
      ks.im2col(3, x.data(), koff, runs, nruns, stride, nr, b);
      for (size_t k = 0; k < 3; ++k)
        for (size_t j = 0; j < nr; ++j) {
          float want = 0.0f;
          for (size_t s = 0; s < nruns; ++s)
            if (int32_t(j) >= runs[s].dst && int32_t(j) < runs[s].dst + runs[s].len)
              want = x[static_cast<size_t>(runs[s].src + koff[k] + int64_t(stride) * (int64_t(j) - runs[s].dst))];
          ASSERT_EQ(b[k * nr + j], want) << "stride " << stride << " len " << len << " k " << k << " j " << j;
        }
    }
}
TEST(F32Avx512, TransposeStoreAddsResidualAndClamps) {
  if (!host_has_avx512()) GTEST_SKIP() << "host lacks avx512f/avx512bw";
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (size_t np : {1, 7, 16, 17, 49})
    for (size_t nc : {1, 5, 16, 32})
      for (bool res : {false, true}) {
        const size_t ldc = 32, ldy = np + 3;
        std::vector<float> ct(np * ldc), r(nc * ldy), y(nc * ldy + 8, 9.0f);
        for (float& v : ct) v = d(rng);
        for (float& v : r) v = d(rng);
        f32_transpose_store__avx512(np, nc, ct.data(), ldc, res ? r.data() : nullptr, y.data(), ldy, -0.5f, 0.75f);
        for (size_t m = 0; m < nc; ++m)
          for (size_t q = 0; q < ldy; ++q) {
            const float got = y[m * ldy + q];
            if (q >= np) {
              ASSERT_EQ(got, 9.0f) << "wrote past np: np " << np << " nc " << nc;
              continue;
            }
            const float want = std::min(0.75f, std::max(-0.5f, ct[q * ldc + m] + (res ? r[m * ldy + q] : 0.0f)));
            ASSERT_EQ(got, want) << "np " << np << " nc " << nc << " m " << m << " q " << q;
          }
        ASSERT_EQ(y[nc * ldy], 9.0f) << "wrote past nc";
      }
}
#endif  // __x86_64__

}  // namespace
}  // namespace lowbit
