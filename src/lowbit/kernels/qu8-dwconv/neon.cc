// NEON depthwise qu8 (qu8_dwconv.h): int16 pairs (x - zp_x) multiplied by int16 weight pairs in
// int16 (|x - zp_x| <= 255 and |w| <= 128, so every product fits: 255 * 128 = 32640) and summed
// pairwise into int32 by sadalp, exact; Advanced SIMD has no vpmaddwd, these two do its work.
#include "lowbit/kernels/qu8-dwconv/qu8_dw_neon_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

struct NeonDw : NeonDwBase {
  static void dot(Acc& acc, const int32_t* p, Wv w) {
    const int16x8_t w16 = vreinterpretq_s16_s32(w);
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v)
      acc.v[v] = vpadalq_s16(acc.v[v], vmulq_s16(vreinterpretq_s16_s32(vld1q_s32(p + 4 * v)), w16));
  }
  static void make_words(const uint8_t* v, size_t n, uint8_t zp_x, int32_t* words) {
    const int16x8_t zp = vdupq_n_s16(zp_x);
    for (size_t i = 0; i < n; i += 8) {
      const int16x8_t a = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vld1_u8(v + i))), zp);
      const int16x8_t b = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vld1_u8(v + i + 1))), zp);
      vst1q_s32(words + i, vreinterpretq_s32_s16(vzip1q_s16(a, b)));
      vst1q_s32(words + i + 4, vreinterpretq_s32_s16(vzip2q_s16(a, b)));
    }
  }
  // Stride 2: the widened values themselves, read as int32 pairs.
  static void make_words_stride2(const uint8_t* v, size_t n, uint8_t zp_x, int32_t* words) {
    const int16x8_t zp = vdupq_n_s16(zp_x);
    for (size_t i = 0; i < n; i += 4)
      vst1q_s32(words + i, vreinterpretq_s32_s16(vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vld1_u8(v + 2 * i))), zp)));
  }
};

}  // namespace

void qu8_dwconv2d_flat__neon(const uint8_t* x, const ::lowbit::Qu8DwPlan& p, const int32_t* w, int32_t init,
                             uint8_t* y, const ::lowbit::Qu8GemmEpilogue& e, void* scratch) {
  qu8_dw_plane<NeonDw>(x, p, w, init, y, e, scratch);
}

const ::lowbit::Qu8DwKernel& qu8_dwconv_neon() {
  static const ::lowbit::Qu8DwKernel k{"neon", 2, true, 0, qu8_dwconv2d_flat__neon};
  return k;
}

}  // namespace LOWBIT_KERNEL_NS
