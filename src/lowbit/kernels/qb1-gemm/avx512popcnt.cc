// AVX-512 VPOPCNTDQ binary kernel: eight pixels' words per zmm, vpopcntq straight into 64-bit
// counters (no byte counters, no flush mid-way). Ice Lake, Sapphire Rapids, Zen 4 and later.
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the traits use its intrinsics.
#include "lowbit/kernels/qb1-gemm/qb1_gemm_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

struct Avx512PopcntWords {
  using Vec = __m512i;
  using Acc = __m512i;
  static constexpr int kLanes = 8;
  static constexpr size_t kSpan = std::numeric_limits<size_t>::max();
  static Vec load(const uint64_t* p) { return _mm512_load_si512(p); }
  static Vec bcast(uint64_t w) { return _mm512_set1_epi64(static_cast<long long>(w)); }
  static Vec vxor(Vec a, Vec b) { return _mm512_xor_si512(a, b); }
  static Acc zero() { return _mm512_setzero_si512(); }
  static Acc count(Acc acc, Vec x) { return _mm512_add_epi64(acc, _mm512_popcnt_epi64(x)); }
  static void flush(Acc acc, uint64_t* t, bool first) {
    _mm512_store_si512(t, first ? acc : _mm512_add_epi64(_mm512_load_si512(t), acc));
  }
};

template <int MR, int NR>
struct qb1_gemm_tile__avx512vpopcntdq {
  static void run(size_t kw, const uint64_t* a, const uint64_t* b, int32_t ktot, int32_t* c, size_t ldc, size_t nc) {
    qb1::gemm_tile<Avx512PopcntWords, MR, NR>(kw, a, b, ktot, c, ldc, nc);
  }
};

}  // namespace

const ::lowbit::Qb1GemmKernels* qb1_gemm_kernels_avx512popcnt() {
  using F = ::lowbit::Feature;
  static constexpr ::lowbit::Qb1GemmKernels k = qb1::make_kernels<qb1_gemm_tile__avx512vpopcntdq, 8, 16>(
      "qb1-qb1w-gemm-8x16-avx512vpopcntdq", "avx512vpopcntdq", ::lowbit::feature_bits({F::avx512f, F::avx512vpopcntdq}));
  return &k;
}

}  // namespace LOWBIT_KERNEL_NS
