// The AVX-512 VPOPCNTDQ binary kernel, compiled against SIMDe, through the real driver on the
// cases every binary set is checked on (tests/qb1_test_support.h).
#include <gtest/gtest.h>

#include "lowbit/target/target.h"
#include "qb1_test_support.h"

namespace lowbit {
namespace {

TEST(Qb1ConvSimde, Avx512VpopcntdqMatchesTheOracle) {
  if (!host_target().has(Feature::avx2)) GTEST_SKIP() << "this build of the emulation uses AVX2 + FMA";
  const Qb1GemmKernels& k = *simde_emulated::qb1_gemm_kernels_avx512popcnt();
  uint32_t seed = 1;
  for (const qb1test::Case& c : qb1test::cases(/*big=*/true)) qb1test::expect_exact(k, c, seed++);
  for (const qb1test::Case& c : qb1test::cases(/*big=*/false)) qb1test::expect_exact(k, c, seed++, /*splits=*/3);
}

}  // namespace
}  // namespace lowbit
