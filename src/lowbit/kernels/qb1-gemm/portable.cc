// The portable binary kernel: one 64-bit word at a time with std::popcount, compiled with the
// baseline flags (no popcnt instruction on x86-64 v1: GCC emits a bit-slicing sequence). Every
// CPU runs it; it is the fallback the faster rows are measured against.
#include "lowbit/kernels/qb1-gemm/qb1_gemm_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

template <int MR, int NR>
struct qb1_gemm_tile__scalar {
  static void run(size_t kw, const uint64_t* a, const uint64_t* b, int32_t ktot, int32_t* c, size_t ldc, size_t nc) {
    qb1::gemm_tile<qb1::ScalarWords, MR, NR>(kw, a, b, ktot, c, ldc, nc);
  }
};

}  // namespace

const ::lowbit::Qb1GemmKernels* qb1_gemm_kernels_portable() {
  static constexpr ::lowbit::Qb1GemmKernels k =
      qb1::make_kernels<qb1_gemm_tile__scalar, 2, 4>("qb1-qb1w-gemm-2x4-scalar", "scalar", 0);
  return &k;
}

}  // namespace LOWBIT_KERNEL_NS
