// AVX2 binary kernel qb1-qb1w-gemm-4x8-avx2: four pixels' words per ymm; popcount by the nibble
// table in vpshufb (Mula's method: AVX2 has no vector popcount), byte counters summed by vpsadbw
// every 31 words. The weights arrive split into nibbles (Qb1GemmKernels::split_nibbles), so only
// the pixels' words are split, once per k for all rows: 6 vector operations per XOR-popcount of
// 4 words instead of 8; ResNet-18's seven 3x3 layers went from 2.65 to 2.09 ms (1.27x; Zen 3, 1
// thread, bench qb1_layers). Tiles with the split: 4x8 2.09 ms, 3x8 2.18, 4x4 2.22, 2x8 2.41;
// before it 4x8 2.32, 2x8 2.34, 3x8 2.36, 4x4 2.50, 6x4 2.89 (accumulators spill). The scalar
// popcnt instruction (2x4, 4x2, 3x3 word tiles) ran 4.06-5.09 ms, no faster than the portable
// set, so x86 has no separate popcnt row.
#include "lowbit/kernels/x86_simd.h"
// x86_simd.h first: the traits use its intrinsics.
#include "lowbit/kernels/qb1-gemm/qb1_gemm_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

struct Avx2Words {
  using Vec = __m256i;
  using Acc = __m256i;  // 32 byte counters
  static constexpr int kLanes = 4;
  static constexpr size_t kSpan = 31;  // 31 * 8 = 248 <= 255 per byte
  static Vec load(const uint64_t* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
  static Vec bcast(uint64_t w) { return _mm256_set1_epi64x(static_cast<long long>(w)); }
  static Vec vxor(Vec a, Vec b) { return _mm256_xor_si256(a, b); }
  static Acc zero() { return _mm256_setzero_si256(); }
  static Acc count(Acc acc, Vec x) {  // unsplit weights (kept for the trait contract)
    const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,  //
                                           0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(x, low4));
    const __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(x, 4), low4));
    return _mm256_add_epi8(acc, _mm256_add_epi8(lo, hi));
  }
  // Split words on both sides (Qb1GemmKernels::split_nibbles): the weights packed split, the
  // pixel panel split once per panel by the driver for all M / MR tiles. 6 operations per
  // XOR-popcount of 4 words (2 XORs with a memory operand, 2 vpshufb, 2 adds) instead of 8.
  static constexpr bool kSplitA = true;
  static Acc count2(Acc acc, Vec a_lo, Vec a_hi, const uint64_t* b_lo, const uint64_t* b_hi) {
    const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,  //
                                           0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    acc = _mm256_add_epi8(acc, _mm256_shuffle_epi8(table, _mm256_xor_si256(a_lo, load(b_lo))));
    acc = _mm256_add_epi8(acc, _mm256_shuffle_epi8(table, _mm256_xor_si256(a_hi, load(b_hi))));
    __asm__("" : "+x"(acc));  // row by row in registers (see qsub-gemm/avx2.cc: else spills)
    return acc;
  }
  // c[0..4) = ktot - 2 * the 4 lanes' counts (vpsadbw sums each lane's 8 byte counters).
  static void store_c(Acc acc, int32_t ktot, int32_t* c) {
    const __m256i sums = _mm256_sad_epu8(acc, _mm256_setzero_si256());  // 4 x u64, each < 2^13
    const __m256i v = _mm256_sub_epi32(_mm256_set1_epi32(ktot), _mm256_add_epi32(sums, sums));
    const __m256i packed = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(c), _mm256_castsi256_si128(packed));
  }
  static void flush(Acc acc, uint64_t* t, bool first) {
    __m256i* p = reinterpret_cast<__m256i*>(t);
    const __m256i sums = _mm256_sad_epu8(acc, _mm256_setzero_si256());
    _mm256_store_si256(p, first ? sums : _mm256_add_epi64(_mm256_load_si256(p), sums));
  }
};

template <int MR, int NR>
struct qb1_gemm_tile__avx2 {
  static void run(size_t kw, const uint64_t* a, const uint64_t* b, int32_t ktot, int32_t* c, size_t ldc, size_t nc) {
    qb1::gemm_tile<Avx2Words, MR, NR>(kw, a, b, ktot, c, ldc, nc);
  }
};

}  // namespace

const ::lowbit::Qb1GemmKernels* qb1_gemm_kernels_avx2() {
  using F = ::lowbit::Feature;
  static constexpr ::lowbit::Qb1GemmKernels k =
      qb1::make_kernels<qb1_gemm_tile__avx2, 4, 8>("qb1-qb1w-gemm-4x8-avx2", "avx2", ::lowbit::feature_bits({F::avx2}),
                                                   /*split_nibbles=*/Avx2Words::kSplitA);
  return &k;
}

}  // namespace LOWBIT_KERNEL_NS
