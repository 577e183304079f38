// ARMv8.2 dot-product depthwise qu8 (qu8_dwconv.h): s8 quads (x ^ 0x80 = x - 128) and sdot,
// 4 taps per instruction, exact; init = (128 - zp_x) * sum(w) restores sum (x - zp_x) w.
#include "lowbit/kernels/qu8-dwconv/qu8_dw_neon_inl.h"

namespace LOWBIT_KERNEL_NS {
namespace {

struct NeonDotDw : NeonDwBase {
  static void dot(Acc& acc, const int32_t* p, Wv w) {
    const int8x16_t w8 = vreinterpretq_s8_s32(w);
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) acc.v[v] = vdotq_s32(acc.v[v], vreinterpretq_s8_s32(vld1q_s32(p + 4 * v)), w8);
  }
  // 8 words per 16-byte load: two tbl windows of four overlapping quads.
  static void make_words(const uint8_t* v, size_t n, uint8_t, int32_t* words) {
    static constexpr uint8_t kWin[32] = {0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6,
                                         4, 5, 6, 7, 5, 6, 7, 8, 6, 7, 8, 9, 7, 8, 9, 10};
    const uint8x16_t w0 = vld1q_u8(kWin), w1 = vld1q_u8(kWin + 16), sh = vdupq_n_u8(0x80);
    for (size_t i = 0; i < n; i += 8) {
      const uint8x16_t b = veorq_u8(vld1q_u8(v + i), sh);
      vst1q_u8(reinterpret_cast<uint8_t*>(words + i), vqtbl1q_u8(b, w0));
      vst1q_u8(reinterpret_cast<uint8_t*>(words + i + 4), vqtbl1q_u8(b, w1));
    }
  }
  // Stride 2: words[i] = v[2i .. 2i + 3] ^ 0x80, 4 windows per tbl of a 16-byte load at v + 2i.
  static void make_words_stride2(const uint8_t* v, size_t n, uint8_t, int32_t* words) {
    static constexpr uint8_t kWin[16] = {0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7, 8, 9};
    const uint8x16_t w0 = vld1q_u8(kWin), sh = vdupq_n_u8(0x80);
    for (size_t i = 0; i < n; i += 4)
      vst1q_u8(reinterpret_cast<uint8_t*>(words + i), vqtbl1q_u8(veorq_u8(vld1q_u8(v + 2 * i), sh), w0));
  }
};

}  // namespace

void qu8_dwconv2d_flat__neondot(const uint8_t* x, const ::lowbit::Qu8DwPlan& p, const int32_t* w, int32_t init,
                                uint8_t* y, const ::lowbit::Qu8GemmEpilogue& e, void* scratch) {
  qu8_dw_plane<NeonDotDw>(x, p, w, init, y, e, scratch);
}

const ::lowbit::Qu8DwKernel& qu8_dwconv_neondot() {
  static const ::lowbit::Qu8DwKernel k{"neondot", 4, false, 128, qu8_dwconv2d_flat__neondot};
  return k;
}

}  // namespace LOWBIT_KERNEL_NS
