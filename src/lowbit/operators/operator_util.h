#pragma once
// Small helpers shared by the fast operator drivers: applicability reasons and scratch memory.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "lowbit/ir/codes.h"
#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit::ops {

// "" if input i is present with dtype f32, else the reason ("input 0 dtype i8, needs f32").
inline std::string need_f32(const NodeContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return "";
  DType t = ctx.in(i).dtype;
  if (t == DType::f32) return "";
  return std::string(what) + " dtype " + dtype_name(t) + ", needs f32";
}

// The int8 kernels' weights: int8 as stored, or 4- / 2-bit codes unpacked once at creation (the
// int8 kernels run every narrower code exactly; the guard reports nodes that run so).
inline Tensor weights_i8(const NodeContext& ctx, size_t i = 1) { return convert_codes(*ctx.constant(i), DType::i8); }

inline std::string need_constant(const NodeContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i) || ctx.constant(i)) return "";
  return std::string(what) + " not constant";
}

inline std::string need_rank4(const NodeContext& ctx) {
  size_t r = ctx.in(0).shape.size();
  if (r == 4) return "";
  return "input rank " + std::to_string(r) + ", needs 4-D NCHW";
}

// Scratch of the run's calling thread. Kernels are immutable once created (Kernel::run is const)
// so that many threads may run one compiled model at once; what a run writes besides its outputs
// lives here, keyed by the calling thread: each concurrent run has its own. Operators run one
// after another, so a thread holds the largest scratch any kernel needs rather than the sum over
// kernels. A slot is grown on first use and then reused (nothing is allocated per inference once
// warm); growing one slot moves only that slot, so fetch every slot a run needs before handing
// pointers to the pool. Contents do not survive other kernels: rewrite what you read. Slots are
// 64-byte aligned (Tensor storage).
inline float* workspace(size_t slot, int64_t floats) {
  thread_local std::vector<Tensor> slots;
  if (slots.size() <= slot) slots.resize(slot + 1);
  Tensor& t = slots[slot];
  if (t.numel() < floats) t = Tensor(DType::f32, {floats});
  return t.data<float>();
}

// One workspace slot per pool thread (slots first, first + 1, ...): table[thread] is that
// thread's scratch. Call it on the run's calling thread, before parallel_for; the table stays
// valid until the next call with the same `first` on this thread.
inline float* const* per_thread_workspace(int threads, int64_t floats, size_t first = 2) {
  thread_local std::vector<std::vector<float*>> tables;
  if (tables.size() <= first) tables.resize(first + 1);
  std::vector<float*>& table = tables[first];
  table.resize(static_cast<size_t>(std::max(threads, 1)));
  for (size_t t = 0; t < table.size(); ++t) table[t] = workspace(first + t, floats);
  return table.data();
}

// Copies an H x W plane into rows of PW floats, surrounded by `fill`: pt rows above, pl columns
// left, and fill up to `total` floats (the rows below, the right columns, any slack).
inline void copy_padded_plane(const float* src, int64_t H, int64_t W, int64_t pt, int64_t pl, int64_t PW, int64_t total,
                              float fill, float* dst) {
  std::fill(dst, dst + pt * PW, fill);
  for (int64_t h = 0; h < H; ++h) {
    float* row = dst + (pt + h) * PW;
    std::fill(row, row + pl, fill);
    std::memcpy(row + pl, src + h * W, static_cast<size_t>(W) * sizeof(float));
    std::fill(row + pl + W, row + PW, fill);
  }
  std::fill(dst + (pt + H) * PW, dst + total, fill);
}

// Rows [r0, r1) of every channel's padded plane (PH rows of PW floats, the H x W input at (pt, pl),
// `fill` around it). Drivers that split their work by image region copy the padding by rows too,
// so that each thread writes (and keeps in its cache) the rows its own pixel panels read.
inline void copy_padded_rows(const float* src, int64_t C, int64_t H, int64_t W, int64_t pt, int64_t pl, int64_t PH,
                             int64_t PW, float fill, int64_t r0, int64_t r1, float* dst) {
  for (int64_t c = 0; c < C; ++c)
    for (int64_t r = r0; r < r1; ++r) {
      float* row = dst + (c * PH + r) * PW;
      const int64_t h = r - pt;
      if (h < 0 || h >= H) {
        std::fill(row, row + PW, fill);
        continue;
      }
      std::fill(row, row + pl, fill);
      std::memcpy(row + pl, src + (c * H + h) * W, static_cast<size_t>(W) * sizeof(float));
      std::fill(row + pl + W, row + PW, fill);
    }
}

// Row blocks for copy_padded_rows: enough for the pool, in image order (thread i's share of a
// parallel_for is the i-th contiguous block).
inline int64_t row_blocks(int64_t rows, int threads) { return std::min<int64_t>(rows, 4 * static_cast<int64_t>(threads)); }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Planes per task for a driver parallel over (image, channel) planes: about `elems` elements a
// task, at most 64 planes, so small maps (7 x 7, 27 x 27) do not pay a task per plane.
inline int64_t planes_per_task(int64_t plane_elems, int64_t elems) {
  return std::clamp<int64_t>(elems / std::max<int64_t>(1, plane_elems), 1, 64);
}

}  // namespace lowbit::ops
