#include "lowbit/operators/strided_copy.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "lowbit/ir/dtype.h"
#include "lowbit/ir/tensor.h"

namespace lowbit {
namespace {

// out (row-major over `dims`) [i...] = in[offset + sum_d i_d * stride[d]], in elements.
struct CopyPlan {
  std::vector<int64_t> dims, stride;
  int64_t offset = 0;
  int64_t run = 1;  // elements per contiguous run (the merged trailing dims)
  size_t elem = 1;
};

// Merges trailing dims into the run while the source stays contiguous, drops unit dims, and
// merges adjacent outer dims whose strides chain (the walk then has fewer levels).
CopyPlan coalesce(CopyPlan p) {
  std::vector<int64_t> d, s;
  for (size_t i = 0; i < p.dims.size(); ++i)
    if (p.dims[i] != 1) d.push_back(p.dims[i]), s.push_back(p.stride[i]);
  p.run = 1;
  while (!d.empty() && s.back() == p.run) {
    p.run *= d.back();
    d.pop_back();
    s.pop_back();
  }
  std::vector<int64_t> md, ms;
  for (size_t i = 0; i < d.size(); ++i) {
    if (!md.empty() && ms.back() == s[i] * d[i]) {
      md.back() *= d[i];
      ms.back() = s[i];
    } else {
      md.push_back(d[i]);
      ms.push_back(s[i]);
    }
  }
  p.dims = std::move(md);
  p.stride = std::move(ms);
  return p;
}

class StridedCopy final : public Kernel {
 public:
  explicit StridedCopy(CopyPlan p) : p_(coalesce(std::move(p))) {
    runs_ = 1;
    for (int64_t d : p_.dims) runs_ *= d;
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const auto* x = static_cast<const uint8_t*>(in[0].data) + p_.offset * static_cast<int64_t>(p_.elem);
    auto* y = static_cast<uint8_t*>(out[0].data);
    const size_t run_bytes = static_cast<size_t>(p_.run) * p_.elem;
    // Tasks of about 64 KB of output each.
    const int64_t per_task = std::max<int64_t>(1, (64 << 10) / static_cast<int64_t>(std::max<size_t>(run_bytes, 1)));
    const int64_t tasks = (runs_ + per_task - 1) / per_task;
    const size_t nd = p_.dims.size();
    pool.parallel_for(tasks, [&](int64_t t, int) {
      const int64_t r0 = t * per_task, r1 = std::min(runs_, r0 + per_task);
      // The odometer of run r0, then stepped.
      std::vector<int64_t> idx(nd, 0);
      int64_t src = 0;
      for (int64_t r = r0, d = static_cast<int64_t>(nd) - 1; d >= 0; --d) {
        idx[static_cast<size_t>(d)] = r % p_.dims[static_cast<size_t>(d)];
        r /= p_.dims[static_cast<size_t>(d)];
        src += idx[static_cast<size_t>(d)] * p_.stride[static_cast<size_t>(d)];
      }
      uint8_t* dst = y + static_cast<size_t>(r0) * run_bytes;
      for (int64_t r = r0; r < r1; ++r) {
        std::memcpy(dst, x + src * static_cast<int64_t>(p_.elem), run_bytes);
        dst += run_bytes;
        for (int64_t d = static_cast<int64_t>(nd) - 1; d >= 0; --d) {
          const size_t k = static_cast<size_t>(d);
          src += p_.stride[k];
          if (++idx[k] < p_.dims[k]) break;
          src -= p_.stride[k] * p_.dims[k];
          idx[k] = 0;
        }
      }
    });
  }

 private:
  CopyPlan p_;
  int64_t runs_ = 1;
};

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

std::vector<int64_t> transpose_perm(const NodeContext& ctx) {
  const size_t r = ctx.in(0).shape.size();
  std::vector<int64_t> perm = ctx.node.attrs.get_ints("perm");
  if (perm.empty())
    for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(r - 1 - i));
  for (int64_t& a : perm)
    if (a < 0) a += static_cast<int64_t>(r);
  return perm;
}

// Integers of a constant int32 / int64 tensor.
bool constant_ints(const Tensor* t, std::vector<int64_t>& v) {
  if (!t) return false;
  v.clear();
  for (int64_t i = 0; i < t->numel(); ++i) {
    if (t->dtype() == DType::i64) v.push_back(t->data<int64_t>()[i]);
    else if (t->dtype() == DType::i32) v.push_back(t->data<int32_t>()[i]);
    else return false;
  }
  return true;
}

// Whole bytes per element: packed sub-byte values share bytes and cannot move as runs of bytes.
std::string check_bytes(const NodeContext& ctx) {
  const DType t = ctx.in(0).dtype;
  if (is_subbyte(t)) return std::string("dtype ") + dtype_name(t) + " is packed below a byte";
  return "";
}

}  // namespace

std::string check_transpose_runs(const NodeContext& ctx) {
  if (std::string r = check_bytes(ctx); !r.empty()) return r;
  const std::vector<int64_t> perm = transpose_perm(ctx);
  if (perm.size() != ctx.in(0).shape.size()) return "perm has " + std::to_string(perm.size()) + " axes";
  return "";
}

std::unique_ptr<Kernel> create_transpose_runs(const NodeContext& ctx) {
  const Shape& xs = ctx.in(0).shape;
  const std::vector<int64_t> perm = transpose_perm(ctx), st = row_major_strides(xs);
  CopyPlan p;
  p.elem = static_cast<size_t>(storage_bytes(ctx.in(0).dtype, 1));
  for (int64_t a : perm) {
    p.dims.push_back(xs[static_cast<size_t>(a)]);
    p.stride.push_back(st[static_cast<size_t>(a)]);
  }
  return std::make_unique<StridedCopy>(std::move(p));
}

std::string check_slice_runs(const NodeContext& ctx) {
  if (std::string r = check_bytes(ctx); !r.empty()) return r;
  std::vector<int64_t> v;
  for (size_t i = 1; i < 5; ++i)
    if (ctx.has_input(i) && !constant_ints(ctx.constant(i), v))
      return "input " + std::to_string(i) + " (starts / ends / axes / steps) is not a constant";
  return "";
}

// The output's first element and per-dim steps, as the reference (and ONNX) clamp them; the
// output shape is the inferred one.
std::unique_ptr<Kernel> create_slice_runs(const NodeContext& ctx) {
  const Shape& xs = ctx.in(0).shape;
  const int64_t r = static_cast<int64_t>(xs.size());
  std::vector<int64_t> starts, ends, axes, steps;
  constant_ints(ctx.constant(1), starts);
  constant_ints(ctx.constant(2), ends);
  if (!ctx.has_input(3) || !constant_ints(ctx.constant(3), axes))
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (!ctx.has_input(4) || !constant_ints(ctx.constant(4), steps)) steps.assign(starts.size(), 1);
  std::vector<int64_t> first(static_cast<size_t>(r), 0), step(static_cast<size_t>(r), 1);
  for (size_t i = 0; i < starts.size() && i < axes.size() && i < steps.size() && i < ends.size(); ++i) {
    const size_t a = static_cast<size_t>(axes[i] < 0 ? axes[i] + r : axes[i]);
    const int64_t dim = xs[a], s = steps[i];
    const int64_t b = starts[i] < 0 ? starts[i] + dim : starts[i];
    first[a] = s > 0 ? std::clamp<int64_t>(b, 0, dim) : std::clamp<int64_t>(b, 0, dim - 1);
    step[a] = s;
  }
  const std::vector<int64_t> st = row_major_strides(xs);
  CopyPlan p;
  p.elem = static_cast<size_t>(storage_bytes(ctx.in(0).dtype, 1));
  p.dims = ctx.out(0).shape;
  for (size_t d = 0; d < xs.size(); ++d) {
    p.offset += first[d] * st[d];
    p.stride.push_back(step[d] * st[d]);
  }
  return std::make_unique<StridedCopy>(std::move(p));
}

}  // namespace lowbit
