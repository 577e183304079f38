// NEON binary kernel: two pixels' words per q register; cnt counts bits per byte into byte
// counters (at most 8 per word step, so 31 steps are exact), widened by pairwise adds every 31.
#include <arm_neon.h>

#include "lowbit/kernels/qb1-gemm/qb1_gemm_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

struct NeonWords {
  using Vec = uint64x2_t;
  using Acc = uint8x16_t;
  static constexpr int kLanes = 2;
  static constexpr size_t kSpan = 31;
  static Vec load(const uint64_t* p) { return vld1q_u64(p); }
  static Vec bcast(uint64_t w) { return vdupq_n_u64(w); }
  static Vec vxor(Vec a, Vec b) { return veorq_u64(a, b); }
  static Acc zero() { return vdupq_n_u8(0); }
  static Acc count(Acc acc, Vec x) { return vaddq_u8(acc, vcntq_u8(vreinterpretq_u8_u64(x))); }
  static void flush(Acc acc, uint64_t* t, bool first) {
    const uint64x2_t sums = vpaddlq_u32(vpaddlq_u16(vpaddlq_u8(acc)));
    vst1q_u64(t, first ? sums : vaddq_u64(vld1q_u64(t), sums));
  }
};

template <int MR, int NR>
struct qb1_gemm_tile__neon {
  static void run(size_t kw, const uint64_t* a, const uint64_t* b, int32_t ktot, int32_t* c, size_t ldc, size_t nc) {
    qb1::gemm_tile<NeonWords, MR, NR>(kw, a, b, ktot, c, ldc, nc);
  }
};

}  // namespace

const ::lowbit::Qb1GemmKernels* qb1_gemm_kernels_neon() {
  using F = ::lowbit::Feature;
  static constexpr ::lowbit::Qb1GemmKernels k =
      qb1::make_kernels<qb1_gemm_tile__neon, 4, 8>("qb1-qb1w-gemm-4x8-neon", "neon", ::lowbit::feature_bits({F::neon}));
  return &k;
}

}  // namespace LOWBIT_KERNEL_NS
