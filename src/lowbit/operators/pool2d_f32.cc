// fp32 pooling drivers, parallel over (image, channel) planes: the kernels read each plane as it
// is, with a per-thread row buffer for its separable passes (kernels/f32-pool/f32_pool.h).
#include "lowbit/operators/pool2d_f32.h"

#include <algorithm>

#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/f32-pool/f32_pool.h"
#include "lowbit/operators/operator_util.h"

namespace lowbit {
namespace {

// Max / average pooling on one ISA's kernels (kernels/f32-pool: AVX-512, AVX2, NEON).
class Pool2dF32 final : public Kernel {
 public:
  Pool2dF32(const Pool2dParams& p, bool is_max, int threads, const F32PoolKernels& ks) : p_(p), max_(is_max), ks_(ks) {
    const auto z = [](int64_t v) { return static_cast<size_t>(v); };
    geom_ = {z(p.H),  z(p.W),  z(p.pad_top), z(p.pad_left), z(p.KH), z(p.KW),
             z(p.SH), z(p.SW), z(p.DH),      z(p.DW),       z(p.OH), z(p.OW)};
    row_floats_ = p.OH > 0 && p.OW > 0 ? 2 * static_cast<int64_t>(f32_pool_row_floats(geom_)) : 0;
    ops::per_thread_workspace(threads, row_floats_);  // warm it now, not in the first inference
    // Planes per task: about 8K inputs each, so small maps (SqueezeNet's 256 x 27 x 27) do not pay
    // a task per plane.
    ppt_ = ops::planes_per_task(p.H * p.W, 8 << 10);
    if (!is_max) {
      inv_h_ = inverse_counts(p.OH, p.H, p.KH, p.SH, p.DH, p.pad_top, p.pad_bottom);
      inv_w_ = inverse_counts(p.OW, p.W, p.KW, p.SW, p.DW, p.pad_left, p.pad_right);
    }
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    if (row_floats_ == 0) return;  // an empty output
    float* const* rows = ops::per_thread_workspace(pool.size(), row_floats_);
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    const int64_t planes = p_.N * p_.C;
    pool.parallel_for(ops::ceil_div(planes, ppt_), [&](int64_t t, int thread) {
      for (int64_t plane_index = t * ppt_; plane_index < std::min(planes, (t + 1) * ppt_); ++plane_index) {
        const float* src = x + plane_index * p_.H * p_.W;
        float* dst = y + plane_index * p_.OH * p_.OW;
        if (max_)
          ks_.maxpool(src, geom_, rows[thread], dst);
        else
          ks_.avgpool(src, geom_, inv_h_.data(), inv_w_.data(), rows[thread], dst);
      }
    });
  }

 private:
  // 1 / (taps of each output's window that count): inside [-pad_begin, in + pad_end) with
  // count_include_pad, else inside [0, in). Padded to a multiple of 16 for vector loads.
  std::vector<float> inverse_counts(int64_t out, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
    std::vector<float> inv(static_cast<size_t>((out + 15) / 16 * 16), 0.0f);
    const int64_t lo = p_.count_include_pad ? -pb : 0, hi = p_.count_include_pad ? in + pe : in;
    for (int64_t o = 0; o < out; ++o) {
      int64_t cnt = 0;
      for (int64_t t = 0; t < k; ++t) {
        const int64_t i = o * s - pb + t * d;
        cnt += i >= lo && i < hi;
      }
      inv[static_cast<size_t>(o)] = cnt ? 1.0f / static_cast<float>(cnt) : 0.0f;
    }
    return inv;
  }

  Pool2dParams p_;
  bool max_;
  F32PoolKernels ks_;
  int64_t row_floats_ = 0, ppt_ = 1;
  F32PoolGeometry geom_{};
  std::vector<float> inv_h_, inv_w_;
};

#if defined(__x86_64__)
class GlobalAvgPoolF32 final : public Kernel {
 public:
  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const Shape& s = in[0].shape;
    const int64_t planes = s[0] * s[1], n = in[0].numel() / std::max<int64_t>(planes, 1);
    const int64_t chunk = 64;
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    pool.parallel_for(ops::ceil_div(planes, chunk), [&](int64_t t, int) {
      const int64_t c0 = t * chunk, c1 = std::min(planes, c0 + chunk);
      f32_global_avgpool__avx2(x + c0 * n, static_cast<size_t>(n), static_cast<size_t>(c1 - c0), y + c0);
    });
  }
};
#endif  // __x86_64__

std::string check_pool_common(const NodeContext& ctx) {
  if (std::string r = ops::need_f32(ctx, 0, "input"); !r.empty()) return r;
  return ops::need_rank4(ctx);
}

}  // namespace

std::string check_maxpool2d_f32(const NodeContext& ctx) {
  if (std::string r = check_pool_common(ctx); !r.empty()) return r;
  if (ctx.node.outputs.size() > 1 && ctx.node.outputs[1] != kNoValue) return "Indices output unsupported";
  return "";
}

std::string check_avgpool2d_f32(const NodeContext& ctx) { return check_pool_common(ctx); }

static std::unique_ptr<Kernel> create_pool(const NodeContext& ctx, bool is_max, const F32PoolKernels& ks) {
  return std::make_unique<Pool2dF32>(pool2d_params(ctx.graph, ctx.node), is_max, ctx.threads, ks);
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_maxpool2d_f32_avx2(const NodeContext& ctx) { return create_pool(ctx, true, *f32_pool_avx2()); }
std::unique_ptr<Kernel> create_maxpool2d_f32_avx512(const NodeContext& ctx) {
  return create_pool(ctx, true, *f32_pool_avx512());
}
std::unique_ptr<Kernel> create_avgpool2d_f32_avx2(const NodeContext& ctx) { return create_pool(ctx, false, *f32_pool_avx2()); }
std::unique_ptr<Kernel> create_avgpool2d_f32_avx512(const NodeContext& ctx) {
  return create_pool(ctx, false, *f32_pool_avx512());
}
#endif
#if defined(__aarch64__)
std::unique_ptr<Kernel> create_maxpool2d_f32_neon(const NodeContext& ctx) { return create_pool(ctx, true, *f32_pool_neon()); }
std::unique_ptr<Kernel> create_avgpool2d_f32_neon(const NodeContext& ctx) { return create_pool(ctx, false, *f32_pool_neon()); }
#endif

std::string check_global_avgpool_f32(const NodeContext& ctx) {
  if (std::string r = ops::need_f32(ctx, 0, "input"); !r.empty()) return r;
  if (ctx.in(0).shape.size() < 3) return "input rank " + std::to_string(ctx.in(0).shape.size()) + ", needs >= 3";
  return "";
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_global_avgpool_f32_avx2(const NodeContext&) {
  return std::make_unique<GlobalAvgPoolF32>();
}
#endif

// ReduceMean over exactly the spatial axes (2 .. rank - 1) is a global average pool whatever
// keepdims says: both outputs are N x C values in the same order (ShuffleNetV2 and MNASNet end so).
std::string check_reducemean_spatial_f32(const NodeContext& ctx) {
  if (std::string r = check_global_avgpool_f32(ctx); !r.empty()) return r;
  const int64_t rank = static_cast<int64_t>(ctx.in(0).shape.size());
  std::vector<int64_t> axes = ctx.node.attrs.get_ints("axes");
  if (!ctx.node.attrs.has("axes") && ctx.has_input(1)) {
    const Tensor* t = ctx.constant(1);
    if (!t || t->dtype() != DType::i64) return "axes input is not a constant i64 tensor";
    axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
  }
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  std::vector<int64_t> spatial;
  for (int64_t a = 2; a < rank; ++a) spatial.push_back(a);
  if (axes != spatial) return "axes are not exactly the spatial axes 2.." + std::to_string(rank - 1);
  return "";
}

}  // namespace lowbit
