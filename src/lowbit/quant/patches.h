#pragma once
// The input patches a Conv or Gemm's weights see (im2col, one output position at a time), for the
// quantizer's measurements: GPTQ's input statistics (quant/rounding.cc) and `--calibration auto`'s
// error at a reader's output (quant/calibration.cc) sample the same positions the same way.
#include <cstdint>

#include "lowbit/ir/graph.h"

namespace lowbit {

// 2-D conv geometry; a Gemm is a 1 x 1 "conv" over its rows (C = K, each row an item of one position).
struct PatchGeometry {
  int64_t C = 0, H = 1, W = 1, groups = 1, KH = 1, KW = 1, OH = 1, OW = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
  int64_t K() const { return C / groups * KH * KW; }  // patch length per group
};

// Of node `n` (a Conv over a 4-D input, or a Gemm over a 2-D one) in `g`, whose shapes are known.
// Throws for other ranks.
PatchGeometry patch_geometry(const Graph& g, const Node& n);

// patch[0, K) = the group-`group` patch of output position `pos` (item-major: pos / (OH * OW) is
// the batch item) of the NCHW input `x`, zeros where it reads padding; the order of the weights'
// [C / group, KH, KW] axes.
void extract_patch(const PatchGeometry& p, const float* x, int64_t pos, int64_t group, float* patch);

// The output position of the i-th of `take` positions sampled evenly from `total`, shifted by
// sample index `sample` so that samples see different positions.
inline int64_t sampled_position(int64_t i, int64_t take, int64_t total, int64_t sample) {
  const int64_t step = total / take, offset = step > 1 ? sample % step : 0;
  const int64_t pos = i * total / take + offset;
  return pos < total - 1 ? pos : total - 1;
}

}  // namespace lowbit
