#pragma once
// u8 pooling of CHW planes (MaxPool and AveragePool keep their input's scale, so these move,
// select and average bytes; GlobalAveragePool requantizes to its output's own; notes/quant_ir.md).
//
// MaxPool reads a plane that the driver padded with 0 and split into SW column phases, so that
// every tap of an output row reads consecutive bytes whatever the stride: padded column c of
// padded row r lives at x[(r * SW + c % SW) * ld_phase + c / SW]. 0 is the smallest u8, so the
// padding never wins a window, exactly as the reference, which skips padded taps.
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace lowbit {

struct Qu8PoolGeometry {
  size_t KH, KW, SH, SW, DH, DW;
  size_t OH, OW;
  size_t ld_phase;  // bytes per phase row, >= ceil(padded width / SW) + 32 (vector reads past OW)
};

// One input row (W bytes at src) after pad_left zero columns into its SW phase rows (dst + f *
// ld_phase for f < SW); every other byte of those rows is zeroed (right padding included).
void qu8_pool_phase_row__avx2(const uint8_t* src, size_t W, size_t pad_left, size_t SW, size_t ld_phase,
                              uint8_t* dst);

// y[oh][ow] = max over kh, kw of padded[oh * SH + kh * DH][ow * SW + kw * DW].
void qu8_maxpool2d_chw__avx2(const uint8_t* x, const Qu8PoolGeometry& g, uint8_t* y);

// MaxPool 3x3 stride 2, dilation 1 (ResNet's stem, SqueezeNet's three), straight from the H x W
// plane at x: per output row the element-wise max of its input rows (those inside the plane) into
// `row` at column pad_left, then per 16 outputs the even and odd bytes of that row at 2 ow and the
// even ones at 2 ow + 2. `row` holds qu8_maxpool_3x3s2_row_bytes(W, pad_left, OW) bytes, zeroed
// here. No phase copy of the plane: SqueezeNet's 3x3/2 pools ran 4-10x slower than ORT's with it.
inline size_t qu8_maxpool_3x3s2_row_bytes(size_t W, size_t pad_left, size_t OW) {
  const size_t used = 2 * ((OW + 15) / 16 * 16) + 2 + 32;  // the horizontal loads
  return (pad_left + W > used ? pad_left + W : used) + 32;
}
void qu8_maxpool2d_3x3s2_chw__avx2(const uint8_t* x, size_t H, size_t W, size_t pad_top, size_t pad_left, size_t OH,
                                   size_t OW, uint8_t* row, uint8_t* y);

// GlobalAveragePool to the output's own quantization. An average spans a fraction of its input's
// range (the final pool of a ReLU network, or a squeeze-excite's: 7-36x narrower than their
// inputs' calibrated ranges, #11), so keeping the input's scale wasted most of the output codes.
// y = clamp(zp_y + nearbyint(double(sum - n * zp_x) * multiplier), lo, hi) with multiplier =
// s_x / (s_y * n) computed once in double: the product is rounded to nearest, ties to even, but a
// true tie of the real mean can land a hair off one through the rounded multiplier. With the
// input's own parameters (artifacts written before, a pool without a calibrated range) it is the
// mean of the codes as it always was: nearbyintf(float(sum) / float(n)), exact ties to even. The
// sum is exact and the same arithmetic runs on every ISA, so every kernel gives the reference's
// bytes.
struct Qu8MeanRequant {
  double multiplier;
  int64_t zp_x, zp_y;
  int32_t lo, hi;  // the output's code range (u4 / u2 codes in u8 storage stop at 15 / 3)
  bool same;       // output parameters equal to the input's
};
inline uint8_t qu8_mean_requant(int64_t sum, size_t n, const Qu8MeanRequant& r) {
  const double q =
      r.same ? static_cast<double>(std::nearbyintf(static_cast<float>(sum) / static_cast<float>(n)))
             : std::nearbyint(static_cast<double>(sum - static_cast<int64_t>(n) * r.zp_x) * r.multiplier) +
                   static_cast<double>(r.zp_y);
  return static_cast<uint8_t>(q < r.lo ? r.lo : q > r.hi ? r.hi : q);
}

// y[c] = qu8_mean_requant(sum of x[c * n .. c * n + n), n, r) for c < channels.
void qu8_global_avgpool__avx2(const uint8_t* x, size_t n, size_t channels, const Qu8MeanRequant& r, uint8_t* y);

// AveragePool of one CHW plane, straight from the input (no padded copy: on Bi-Real / ResNet-D
// shortcuts' 2x2 / 2 pools of 14x14 planes, a copy and phase split per plane cost 5x the fp32
// kernel). Separable: each output row sums its kernel rows inside the image into rowsum (W
// uint32), then each output its kernel columns inside the image (in_w[ow] of them from column
// w_first[ow], DW apart) into sums (OH * OW int32), then one pass over the plane divides:
// y = clamp(int(nearbyintf(float(S + corr) / float(cnt)))), zp where cnt = 0, as the reference.
// cnt[p] counts the taps (inside the declared pads with count_include_pad, else inside the image)
// and corr[p] = zp * (taps counted - taps inside): a counted padded tap is real 0, code zp.
// Whole-plane passes, not per row: rows of 7 or 14 outputs left the vector loops to their scalar
// remainders.
struct Qu8AvgGeometry {
  size_t H, W, KH, KW, SH, SW, DH, DW, OH, OW;
  int64_t pad_top;
  const int32_t *w_first, *in_w;  // per output column
  bool w_inside;                  // every window wholly inside its row: w_first[ow] = w_first[0] + ow * SW
  const int32_t *cnt, *corr;      // per output pixel (OH * OW)
  int32_t zp;
};
// scratch: W + OH * OW uint32.
void qu8_avgpool2d_chw__avx2(const uint8_t* x, const Qu8AvgGeometry& g, uint32_t* scratch, uint8_t* y);

// The same four on AArch64 Advanced SIMD (kernels/qu8-pool/neon.cc).
void qu8_pool_phase_row__neon(const uint8_t* src, size_t W, size_t pad_left, size_t SW, size_t ld_phase,
                              uint8_t* dst);
void qu8_maxpool2d_chw__neon(const uint8_t* x, const Qu8PoolGeometry& g, uint8_t* y);
void qu8_global_avgpool__neon(const uint8_t* x, size_t n, size_t channels, const Qu8MeanRequant& r, uint8_t* y);
void qu8_avgpool2d_chw__neon(const uint8_t* x, const Qu8AvgGeometry& g, uint32_t* scratch, uint8_t* y);

// One ISA's pooling functions, for the drivers (operators/pool2d_u8.cc).
struct Qu8PoolKernels {
  void (*phase_row)(const uint8_t* src, size_t W, size_t pad_left, size_t SW, size_t ld_phase, uint8_t* dst);
  void (*maxpool)(const uint8_t* x, const Qu8PoolGeometry& g, uint8_t* y);
  void (*global_avgpool)(const uint8_t* x, size_t n, size_t channels, const Qu8MeanRequant& r, uint8_t* y);
  void (*avgpool)(const uint8_t* x, const Qu8AvgGeometry& g, uint32_t* scratch, uint8_t* y);
  // nullptr: 3x3 stride 2 goes through the phase planes too
  void (*maxpool_3x3s2)(const uint8_t* x, size_t H, size_t W, size_t pad_top, size_t pad_left, size_t OH, size_t OW,
                        uint8_t* row, uint8_t* y);
};

}  // namespace lowbit
