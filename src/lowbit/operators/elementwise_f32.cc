// fp32 element-wise drivers: the op and the broadcast are resolved once at creation; a run is one
// kernel call per contiguous chunk, chunks split over threads.
#include "lowbit/operators/elementwise_f32.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "lowbit/common/error.h"
#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/f32-velementwise/velementwise.h"

namespace lowbit {
namespace {

// How a binary node's inputs map onto its output: the output is `outer` runs of `inner`
// elements; a full side reads every element, a short side one value per run (outer == 1: a
// scalar).
struct Broadcast {
  bool a_full = true, b_full = true;
  int64_t outer = 1, inner = 1;
};

// A side is full (its shape is the output's), or short: its numel is the product of the output's
// first k dims and its shape, right-aligned to the output's rank, is those dims then ones.
std::optional<Broadcast> resolve(const Shape& a, const Shape& b, const Shape& y) {
  const int64_t ny = num_elements(y);
  const auto full = [&](const Shape& s) { return s == y; };
  // k when s, right-aligned to y's rank, is y's first k dims then ones; else -1.
  const auto lead = [&](const Shape& s) -> int64_t {
    if (s.size() > y.size()) return -1;
    Shape sp(y.size() - s.size(), 1);
    sp.insert(sp.end(), s.begin(), s.end());
    size_t k = sp.size();
    while (k > 0 && sp[k - 1] == 1) --k;
    for (size_t i = 0; i < k; ++i)
      if (sp[i] != y[i]) return -1;
    return static_cast<int64_t>(k);
  };
  Broadcast r;
  if (full(a) && full(b)) {
    r.outer = 1, r.inner = ny;
    return r;
  }
  for (int side = 0; side < 2; ++side) {
    const Shape& f = side ? a : b;  // the full side
    const Shape& s = side ? b : a;  // the short one
    if (!full(f)) continue;
    const int64_t k = lead(s);
    if (k < 0) continue;
    int64_t outer = 1;
    for (int64_t i = 0; i < k; ++i) outer *= y[static_cast<size_t>(i)];
    if (outer != num_elements(s)) continue;
    r.a_full = side == 1;
    r.b_full = side == 0;
    r.outer = outer;
    r.inner = outer ? ny / outer : 0;
    return r;
  }
  return std::nullopt;
}

class VElementwise final : public Kernel {
 public:
  VElementwise(const NodeContext& ctx, const F32VElementwiseKernels& ks) {
    const Node& n = ctx.node;
    const VElementwiseOp& e = *find_velementwise_op(n.op);  // the check passed
    if (e.unary) {
      const VUnary u = static_cast<VUnary>(e.index);
      unary_ = ks.unary[e.index];
      if (u == VUnary::leaky_relu) params_.alpha = n.attrs.get_float("alpha", 0.01f);
      if (u == VUnary::hard_sigmoid) {
        params_.alpha = n.attrs.get_float("alpha", 0.2f);
        params_.beta = n.attrs.get_float("beta", 0.5f);
      }
      clip_ = u == VUnary::clamp;
      return;
    }
    bc_ = *resolve(ctx.in(0).shape, ctx.in(1).shape, ctx.out(0).shape);
    binary_ = bc_.a_full && bc_.b_full ? ks.vv[e.index] : bc_.a_full ? ks.vs[e.index] : ks.sv[e.index];
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    float* y = out[0].as<float>();
    if (unary_) {
      VUnaryParams p = params_;
      if (clip_) {  // min / max are inputs (opset 11+): scalars, read per run
        if (in.size() > 1 && in[1].data) p.lo = in[1].as<float>()[0];
        if (in.size() > 2 && in[2].data) p.hi = in[2].as<float>()[0];
      }
      const float* x = in[0].as<float>();
      const int64_t n = out[0].numel();
      pool.parallel_for(ops_chunks(n), [&](int64_t c, int) {
        const int64_t i0 = c * kChunk, i1 = std::min(n, i0 + kChunk);
        unary_(static_cast<size_t>(i1 - i0), x + i0, y + i0, p);
      });
      return;
    }
    const float* a = in[0].as<float>();
    const float* b = in[1].as<float>();
    if (bc_.outer == 1) {  // one run: chunks of it
      const int64_t n = bc_.inner;
      pool.parallel_for(ops_chunks(n), [&](int64_t c, int) {
        const int64_t i0 = c * kChunk, i1 = std::min(n, i0 + kChunk);
        binary_(static_cast<size_t>(i1 - i0), bc_.a_full ? a + i0 : a, bc_.b_full ? b + i0 : b, y + i0);
      });
      return;
    }
    pool.parallel_for(bc_.outer, [&](int64_t r, int) {  // a run per short-side value
      const int64_t o = r * bc_.inner;
      binary_(static_cast<size_t>(bc_.inner), bc_.a_full ? a + o : a + r, bc_.b_full ? b + o : b + r, y + o);
    });
  }

 private:
  // 16 K floats (64 KB) a task: memory-bound work, big enough that a task is not mostly overhead.
  static constexpr int64_t kChunk = 16384;
  static int64_t ops_chunks(int64_t n) { return (n + kChunk - 1) / kChunk; }
  VUnaryFn unary_ = nullptr;
  VUnaryParams params_;
  bool clip_ = false;
  VBinaryFn binary_ = nullptr;
  Broadcast bc_;
};

// y = clamp(x * scale[c] + shift[c]) over each (n, c) plane; tasks are runs of whole planes of
// about kChunk elements (7x7 planes one by one would be mostly overhead).
class BatchNormF32 final : public Kernel {
 public:
  BatchNormF32(const NodeContext& ctx, VAffineFn fn) : fn_(fn) {
    const Node& n = ctx.node;
    const Shape& xs = ctx.in(0).shape;
    const float eps = n.attrs.get_float("epsilon", 1e-5f);
    C_ = xs[1];
    planes_ = xs[0] * C_;
    inner_ = num_elements(xs) / std::max<int64_t>(planes_, 1);
    const float *sc = ctx.constant(1)->data<float>(), *bi = ctx.constant(2)->data<float>();
    const float *mean = ctx.constant(3)->data<float>(), *var = ctx.constant(4)->data<float>();
    scale_.resize(static_cast<size_t>(C_));
    shift_.resize(static_cast<size_t>(C_));
    for (int64_t c = 0; c < C_; ++c) {  // the reference's expressions, so the same bits
      const float k = sc[c] / std::sqrt(var[c] + eps);
      scale_[static_cast<size_t>(c)] = k;
      shift_[static_cast<size_t>(c)] = bi[c] - mean[c] * k;
    }
    lo_ = n.attrs.get_float("act_min", -INFINITY);
    hi_ = n.attrs.get_float("act_max", INFINITY);
    per_task_ = std::max<int64_t>(1, kChunk / std::max<int64_t>(inner_, 1));
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    pool.parallel_for((planes_ + per_task_ - 1) / per_task_, [&](int64_t t, int) {
      const int64_t p1 = std::min(planes_, (t + 1) * per_task_);
      for (int64_t p = t * per_task_; p < p1; ++p) {
        const size_t c = static_cast<size_t>(p % C_);
        fn_(static_cast<size_t>(inner_), x + p * inner_, y + p * inner_, scale_[c], shift_[c], lo_, hi_);
      }
    });
  }

 private:
  static constexpr int64_t kChunk = 16384;
  VAffineFn fn_;
  int64_t C_ = 0, planes_ = 0, inner_ = 0, per_task_ = 1;
  std::vector<float> scale_, shift_;
  float lo_ = -INFINITY, hi_ = INFINITY;
};

std::unique_ptr<Kernel> create_with(const NodeContext& ctx, const F32VElementwiseKernels* ks) {
  if (!ks) throw Error("element-wise kernels of this ISA are not in this build");
  return std::make_unique<VElementwise>(ctx, *ks);
}

std::unique_ptr<Kernel> create_bn_with(const NodeContext& ctx, const F32VElementwiseKernels* ks) {
  if (!ks) throw Error("element-wise kernels of this ISA are not in this build");
  return std::make_unique<BatchNormF32>(ctx, ks->affine);
}

}  // namespace

std::string check_batchnorm_f32(const NodeContext& ctx) {
  const Node& n = ctx.node;
  if (n.attrs.get_int("training_mode", 0) != 0) return "training mode";
  if (ctx.in(0).dtype != DType::f32 || ctx.out(0).dtype != DType::f32)
    return std::string("dtype ") + dtype_name(ctx.in(0).dtype) + ", needs f32";
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i] != kNoValue) return "training outputs (running mean / variance) are requested";
  const Shape& xs = ctx.in(0).shape;
  if (xs.size() < 2) return "input rank " + std::to_string(xs.size()) + ", needs N x C x ...";
  for (size_t i = 1; i < 5; ++i) {
    const Tensor* t = ctx.constant(i);
    if (!t) return "parameter input " + std::to_string(i) + " is not a constant";
    if (t->dtype() != DType::f32 || t->numel() != xs[1])
      return "parameter input " + std::to_string(i) + " is not " + std::to_string(xs[1]) + " f32 values";
  }
  return "";
}

std::unique_ptr<Kernel> create_batchnorm_portable(const NodeContext& ctx) {
  return create_bn_with(ctx, f32_velementwise_portable());
}
#if defined(__x86_64__)
std::unique_ptr<Kernel> create_batchnorm_avx512(const NodeContext& ctx) { return create_bn_with(ctx, f32_velementwise_avx512()); }
std::unique_ptr<Kernel> create_batchnorm_avx2(const NodeContext& ctx) { return create_bn_with(ctx, f32_velementwise_avx2()); }
#endif
#if defined(__aarch64__)
std::unique_ptr<Kernel> create_batchnorm_neon(const NodeContext& ctx) { return create_bn_with(ctx, f32_velementwise_neon()); }
#endif

std::string check_velementwise_f32(const NodeContext& ctx) {
  const Node& n = ctx.node;
  const VElementwiseOp* e = find_velementwise_op(n.op);
  if (!e) return "not an element-wise op of these kernels";
  const bool unary = e->unary;
  for (size_t i = 0; i < (unary ? 1 : 2); ++i)
    if (ctx.in(i).dtype != DType::f32) return std::string("input dtype ") + dtype_name(ctx.in(i).dtype) + ", needs f32";
  if (ctx.out(0).dtype != DType::f32) return std::string("output dtype ") + dtype_name(ctx.out(0).dtype) + ", needs f32";
  if (n.op == "Clip")
    for (size_t i = 1; i < 3; ++i)
      if (ctx.has_input(i) && (ctx.in(i).dtype != DType::f32 || num_elements(ctx.in(i).shape) != 1))
        return "Clip min / max must be f32 scalars";
  if (!unary && !resolve(ctx.in(0).shape, ctx.in(1).shape, ctx.out(0).shape))
    return "broadcast " + shape_str(ctx.in(0).shape) + " with " + shape_str(ctx.in(1).shape) +
           ": only equal shapes, a scalar, or leading dims then ones (per-channel [N, C, 1, 1])";
  return "";
}

std::unique_ptr<Kernel> create_velementwise_portable(const NodeContext& ctx) {
  return create_with(ctx, f32_velementwise_portable());
}
#if defined(__x86_64__)
std::unique_ptr<Kernel> create_velementwise_avx512(const NodeContext& ctx) { return create_with(ctx, f32_velementwise_avx512()); }
std::unique_ptr<Kernel> create_velementwise_avx2(const NodeContext& ctx) { return create_with(ctx, f32_velementwise_avx2()); }
#endif
#if defined(__aarch64__)
std::unique_ptr<Kernel> create_velementwise_neon(const NodeContext& ctx) { return create_with(ctx, f32_velementwise_neon()); }
#endif

ConvPostOp::ConvPostOp(const Conv2dParams& p, const Target& target)
    : affine_(p.has_post_affine()), scale_(p.post_scale), shift_(p.post_shift) {
  if (p.post_op.empty()) return;
  const VElementwiseOp* e = find_velementwise_op(p.post_op);
  if (!e || !e->unary) throw Error("Conv post_op " + p.post_op + " has no element-wise kernel");
  for (const F32VElementwiseKernels* ks : f32_velementwise_sets())
    if (ks->runs_on(target)) {
      fn_ = ks->unary[e->index];
      break;
    }
  if (!fn_) throw Error("no element-wise kernel set runs on target " + target.name);
  // conv2d_params has applied the op's defaults; ops without alpha / beta ignore them.
  params_.alpha = p.post_alpha;
  params_.beta = p.post_beta;
}

}  // namespace lowbit
