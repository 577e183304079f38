// F(2x2, 3x3) transforms compiled with this file's ISA flags (the loops: f32_winograd_inl.h).
#include "lowbit/kernels/f32-winograd/f32_winograd_inl.h"

namespace lowbit {

void f32_winograd_split__neon(const float* plane, size_t pw, size_t rows, size_t half, float* eo) {
  winograd_inl::deinterleave(plane, pw, rows, half, eo);
}

void f32_winograd_input_2x2_3x3__neon(const float* eo, size_t half, const F32WinogradSegment* segs, size_t nsegs,
                                  size_t nr, float* dst, size_t ld) {
  winograd_inl::input_2x2_3x3(eo, half, segs, nsegs, nr, dst, ld);
}

void f32_winograd_output_2x2_3x3__neon(const float* s, size_t ld, size_t nr, const F32WinogradSegment* segs,
                                   size_t nsegs, float bias, const float* res, float* y, size_t oh_max,
                                   size_t ow_max, float lo, float hi) {
  winograd_inl::output_2x2_3x3(s, ld, nr, segs, nsegs, bias, res, y, oh_max, ow_max, lo, hi);
}

}  // namespace lowbit
