#pragma once
// Small helpers shared by the fast operator drivers: applicability reasons and scratch memory.
#include <algorithm>
#include <string>
#include <vector>

#include "lowbit/dispatch/registry.h"

namespace lowbit::ops {

// "" if input i is present with dtype f32, else the reason ("input 0 dtype i8, needs f32").
inline std::string need_f32(const NodeContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return "";
  DType t = ctx.in(i).dtype;
  if (t == DType::f32) return "";
  return std::string(what) + " dtype " + dtype_name(t) + ", needs f32";
}

inline std::string need_constant(const NodeContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i) || ctx.constant(i)) return "";
  return std::string(what) + " not constant";
}

inline std::string need_rank4(const NodeContext& ctx) {
  size_t r = ctx.in(0).shape.size();
  if (r == 4) return "";
  return "input rank " + std::to_string(r) + ", needs 4-D NCHW";
}

// 64-byte aligned float scratch, one slot per thread, grown on demand (first run with a bigger
// pool) and otherwise reused across inferences.
class ThreadScratch {
 public:
  ThreadScratch() = default;
  ThreadScratch(int threads, int64_t floats) { reserve(threads, floats); }
  void reserve(int threads, int64_t floats) {
    if (floats > floats_) {
      slots_.clear();
      floats_ = floats;
    }
    while (static_cast<int>(slots_.size()) < threads) slots_.emplace_back(DType::f32, Shape{floats_});
  }
  float* get(int thread) { return slots_[static_cast<size_t>(thread)].data<float>(); }
  int64_t floats() const { return floats_; }

 private:
  int64_t floats_ = 0;
  std::vector<Tensor> slots_;
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace lowbit::ops
