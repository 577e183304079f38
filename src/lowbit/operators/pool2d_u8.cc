// u8 pooling drivers, parallel over (image, channel) planes. MaxPool copies each plane into a
// per-thread buffer padded with 0 (never a window's maximum) and split into column phases
// (kernels/qu8-pool/qu8_pool.h), large enough for every window including ceil_mode overhang;
// 3x3 stride 2 reads the plane itself where the ISA has that kernel (AVX2).
// AveragePool reads the planes as they are (separable sums, the padding's zero points added back
// by the divisors). The ISA comes in as a table of kernel functions (AVX2 or NEON).
#include "lowbit/operators/pool2d_u8.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/qu8-pool/qu8_pool.h"
#include "lowbit/operators/operator_util.h"
#include "lowbit/operators/qconv2d_u8.h"

namespace lowbit {
namespace {

// Taps of one axis per output position: counted ones (inside the declared pads with
// count_include_pad, else inside the input) and those inside the input, as the reference's
// axis windows.
void axis_counts(int64_t n_out, int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t pad_begin,
                 int64_t pad_end, bool include_pad, std::vector<int32_t>& cnt, std::vector<int32_t>& inside) {
  cnt.assign(static_cast<size_t>(n_out), 0);
  inside.assign(static_cast<size_t>(n_out), 0);
  for (int64_t o = 0; o < n_out; ++o)
    for (int64_t t = 0; t < k; ++t) {
      const int64_t i = o * stride - pad_begin + t * dil;
      const bool in_image = i >= 0 && i < in, in_pads = i >= -pad_begin && i < in + pad_end;
      inside[static_cast<size_t>(o)] += in_image;
      cnt[static_cast<size_t>(o)] += include_pad ? in_pads : in_image;
    }
}

class MaxPoolU8 final : public Kernel {
 public:
  MaxPoolU8(const Pool2dParams& p, int threads, const Qu8PoolKernels& ks) : p_(p), ks_(ks) {
    PH_ = std::max(p.H + p.pad_top + p.pad_bottom, (p.OH - 1) * p.SH + (p.KH - 1) * p.DH + 1);
    const int64_t PW = std::max(p.W + p.pad_left + p.pad_right, (p.OW - 1) * p.SW + (p.KW - 1) * p.DW + 1);
    geom_ = {static_cast<size_t>(p.KH), static_cast<size_t>(p.KW), static_cast<size_t>(p.SH),
             static_cast<size_t>(p.SW), static_cast<size_t>(p.DH), static_cast<size_t>(p.DW),
             static_cast<size_t>(p.OH), static_cast<size_t>(p.OW), static_cast<size_t>(ops::ceil_div(PW, p.SW) + 32)};
    ld_row_ = p.SW * static_cast<int64_t>(geom_.ld_phase);
    plane_floats_ = ops::ceil_div(PH_ * ld_row_, 4);
    direct_ = ks.maxpool_3x3s2 && p.KH == 3 && p.KW == 3 && p.SH == 2 && p.SW == 2 && p.DH == 1 && p.DW == 1;
    if (direct_)
      plane_floats_ = ops::ceil_div(static_cast<int64_t>(qu8_maxpool_3x3s2_row_bytes(
                                        static_cast<size_t>(p.W), static_cast<size_t>(p.pad_left), static_cast<size_t>(p.OW))),
                                    4);
    ops::per_thread_workspace(threads, plane_floats_);  // warm it now, not in the first inference
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    float* const* scratch = ops::per_thread_workspace(pool.size(), plane_floats_);
    const uint8_t* x = in[0].as<uint8_t>();
    uint8_t* y = out[0].as<uint8_t>();
    pool.parallel_for(p_.N * p_.C, [&](int64_t plane_index, int thread) {
      uint8_t* plane = reinterpret_cast<uint8_t*>(scratch[thread]);
      const uint8_t* src = x + plane_index * p_.H * p_.W;
      if (direct_) {
        ks_.maxpool_3x3s2(src, static_cast<size_t>(p_.H), static_cast<size_t>(p_.W), static_cast<size_t>(p_.pad_top),
                          static_cast<size_t>(p_.pad_left), static_cast<size_t>(p_.OH), static_cast<size_t>(p_.OW),
                          plane, y + plane_index * p_.OH * p_.OW);
        return;
      }
      std::memset(plane, 0, static_cast<size_t>(p_.pad_top * ld_row_));
      for (int64_t h = 0; h < p_.H; ++h)
        ks_.phase_row(src + h * p_.W, static_cast<size_t>(p_.W), static_cast<size_t>(p_.pad_left), geom_.SW,
                      geom_.ld_phase, plane + (h + p_.pad_top) * ld_row_);
      std::memset(plane + (p_.pad_top + p_.H) * ld_row_, 0, static_cast<size_t>((PH_ - p_.pad_top - p_.H) * ld_row_));
      ks_.maxpool(plane, geom_, y + plane_index * p_.OH * p_.OW);
    });
  }

 private:
  Pool2dParams p_;
  Qu8PoolKernels ks_;
  int64_t PH_ = 0, ld_row_ = 0, plane_floats_ = 0;
  Qu8PoolGeometry geom_{};
  bool direct_ = false;  // 3x3 stride 2 from the plane itself (ks_.maxpool_3x3s2)
};

// AveragePool from the input planes (kernels/qu8-pool/qu8_pool.h, Qu8AvgGeometry); per thread,
// uint32 scratch for a row's sums and the plane's window sums.
class AvgPoolU8 final : public Kernel {
 public:
  AvgPoolU8(const Pool2dParams& p, int threads, const Qu8PoolKernels& ks, int32_t zp) : p_(p), ks_(ks) {
    std::vector<int32_t> cnt_h, in_h, cnt_w;
    axis_counts(p.OH, p.H, p.KH, p.SH, p.DH, p.pad_top, p.pad_bottom, p.count_include_pad, cnt_h, in_h);
    axis_counts(p.OW, p.W, p.KW, p.SW, p.DW, p.pad_left, p.pad_right, p.count_include_pad, cnt_w, in_w_);
    w_first_.assign(static_cast<size_t>(p.OW), 0);
    for (int64_t ow = 0; ow < p.OW; ++ow) {  // the first kernel column inside the image
      int64_t i = ow * p.SW - p.pad_left;
      while (i < 0) i += p.DW;
      w_first_[static_cast<size_t>(ow)] = static_cast<int32_t>(std::min(i, p.W - 1));
    }
    bool w_inside = true;
    for (int64_t ow = 0; ow < p.OW; ++ow)
      w_inside = w_inside && in_w_[static_cast<size_t>(ow)] == p.KW &&
                 w_first_[static_cast<size_t>(ow)] == w_first_[0] + ow * p.SW;
    cnt_.resize(static_cast<size_t>(p.OH * p.OW));
    corr_.resize(cnt_.size());
    for (int64_t oh = 0; oh < p.OH; ++oh)
      for (int64_t ow = 0; ow < p.OW; ++ow) {
        const size_t i = static_cast<size_t>(oh * p.OW + ow), h = static_cast<size_t>(oh), w = static_cast<size_t>(ow);
        cnt_[i] = cnt_h[h] * cnt_w[w];
        corr_[i] = zp * (cnt_[i] - in_h[h] * in_w_[w]);
      }
    const auto z = [](int64_t v) { return static_cast<size_t>(v); };
    geom_ = {z(p.H),  z(p.W),  z(p.KH),        z(p.KW),      z(p.SH),      z(p.SW),      z(p.DH), z(p.DW),
             z(p.OH), z(p.OW), p.pad_top, w_first_.data(), in_w_.data(), w_inside, cnt_.data(), corr_.data(), zp};
    scratch_floats_ = p.W + p.OH * p.OW;  // uint32 sums, in float-sized scratch
    ops::per_thread_workspace(threads, scratch_floats_);  // warm it now, not in the first inference
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    float* const* scratch = ops::per_thread_workspace(pool.size(), scratch_floats_);
    const uint8_t* x = in[0].as<uint8_t>();
    uint8_t* y = out[0].as<uint8_t>();
    pool.parallel_for(p_.N * p_.C, [&](int64_t plane, int thread) {
      ks_.avgpool(x + plane * p_.H * p_.W, geom_, reinterpret_cast<uint32_t*>(scratch[thread]),
                  y + plane * p_.OH * p_.OW);
    });
  }

 private:
  Pool2dParams p_;
  Qu8PoolKernels ks_;
  std::vector<int32_t> w_first_, in_w_, cnt_, corr_;
  Qu8AvgGeometry geom_{};
  int64_t scratch_floats_ = 0;
};

class GlobalAvgPoolU8 final : public Kernel {
 public:
  GlobalAvgPoolU8(const NodeContext& ctx, const Qu8PoolKernels& ks) : ks_(ks) {
    // The reference's arithmetic (kernels/reference/pool.cc): the ratio in double, once.
    const auto& qx = ctx.in(0).quant;
    const auto& qy = ctx.out(0).quant;
    const double sx = qx ? qx->scale[0] : 1.0, sy = qy ? qy->scale[0] : 1.0;
    const Shape& s = ctx.in(0).shape;
    const CodeRange r = code_range(ctx.out(0));
    const int64_t zx = qx ? qx->zero_point[0] : 0, zy = qy ? qy->zero_point[0] : 0;
    rq_ = {sx / (sy * static_cast<double>(s[2] * s[3])), zx, zy, r.lo, r.hi, sx == sy && zx == zy};
  }
  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const Shape& s = in[0].shape;
    const int64_t planes = s[0] * s[1], n = s[2] * s[3], chunk = 64;
    const uint8_t* x = in[0].as<uint8_t>();
    uint8_t* y = out[0].as<uint8_t>();
    pool.parallel_for(ops::ceil_div(planes, chunk), [&](int64_t t, int) {
      const int64_t c0 = t * chunk, c1 = std::min(planes, c0 + chunk);
      ks_.global_avgpool(x + c0 * n, static_cast<size_t>(n), static_cast<size_t>(c1 - c0), rq_, y + c0);
    });
  }

 private:
  Qu8PoolKernels ks_;
  Qu8MeanRequant rq_{};
};

#if defined(__x86_64__)
constexpr Qu8PoolKernels kAvx2 = {qu8_pool_phase_row__avx2, qu8_maxpool2d_chw__avx2, qu8_global_avgpool__avx2,
                                  qu8_avgpool2d_chw__avx2, qu8_maxpool2d_3x3s2_chw__avx2};
#endif
#if defined(__aarch64__)
constexpr Qu8PoolKernels kNeon = {qu8_pool_phase_row__neon, qu8_maxpool2d_chw__neon, qu8_global_avgpool__neon,
                                  qu8_avgpool2d_chw__neon, nullptr};
#endif

// MaxPool and AveragePool pass the input's quantization through: a different output scale would
// need a requantization.
std::string check_u8_passthrough(const NodeContext& ctx) {
  if (std::string r = qops::need_dtype(ctx, 0, "input", DType::u8); !r.empty()) return r;
  if (std::string r = ops::need_rank4(ctx); !r.empty()) return r;
  if (ctx.out(0).dtype != DType::u8) return std::string("output dtype ") + dtype_name(ctx.out(0).dtype) + ", needs u8";
  const auto& qi = ctx.in(0).quant;
  const auto& qo = ctx.out(0).quant;
  if (qi && qo && (qi->scale != qo->scale || qi->zero_point != qo->zero_point))
    return "output quantization differs from the input's (requantizing pooling unsupported)";
  return "";
}

}  // namespace

std::string check_maxpool2d_u8(const NodeContext& ctx) {
  if (std::string r = check_u8_passthrough(ctx); !r.empty()) return r;
  if (ctx.node.outputs.size() > 1 && ctx.node.outputs[1] != kNoValue) return "Indices output unsupported";
  return "";
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_maxpool2d_u8_avx2(const NodeContext& ctx) {
  return std::make_unique<MaxPoolU8>(pool2d_params(ctx.graph, ctx.node), ctx.threads, kAvx2);
}
#endif
#if defined(__aarch64__)
std::unique_ptr<Kernel> create_maxpool2d_u8_neon(const NodeContext& ctx) {
  return std::make_unique<MaxPoolU8>(pool2d_params(ctx.graph, ctx.node), ctx.threads, kNeon);
}
#endif

std::string check_avgpool2d_u8(const NodeContext& ctx) {
  if (std::string r = check_u8_passthrough(ctx); !r.empty()) return r;
  const auto& q = ctx.in(0).quant;
  if (!q || q->zero_point.size() != 1) return "needs a per-tensor quantized input (its zero point pads)";
  const Pool2dParams p = pool2d_params(ctx.graph, ctx.node);
  // Sums are exact uint32 and the numerator an exact integer in float: below 2^24.
  if (p.KH * p.KW > 65536) return "window above 65536 taps";
  return "";
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_avgpool2d_u8_avx2(const NodeContext& ctx) {
  return std::make_unique<AvgPoolU8>(pool2d_params(ctx.graph, ctx.node), ctx.threads, kAvx2,
                                     ctx.in(0).quant->zero_point[0]);
}
#endif
#if defined(__aarch64__)
std::unique_ptr<Kernel> create_avgpool2d_u8_neon(const NodeContext& ctx) {
  return std::make_unique<AvgPoolU8>(pool2d_params(ctx.graph, ctx.node), ctx.threads, kNeon,
                                     ctx.in(0).quant->zero_point[0]);
}
#endif

// GlobalAveragePool requantizes (its output has parameters of its own): per-tensor on both sides.
std::string check_global_avgpool_u8(const NodeContext& ctx) {
  if (std::string r = qops::need_dtype(ctx, 0, "input", DType::u8); !r.empty()) return r;
  if (std::string r = ops::need_rank4(ctx); !r.empty()) return r;
  if (ctx.out(0).dtype != DType::u8) return std::string("output dtype ") + dtype_name(ctx.out(0).dtype) + ", needs u8";
  for (const Value* v : {&ctx.in(0), &ctx.out(0)})
    if (v->quant && (v->quant->scale.size() != 1 || v->quant->zero_point.size() != 1))
      return "needs per-tensor quantization of '" + v->name + "'";
  if (ctx.in(0).quant.has_value() != ctx.out(0).quant.has_value())
    return "input and output must both be quantized or both be raw codes";
  return "";
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_global_avgpool_u8_avx2(const NodeContext& ctx) {
  return std::make_unique<GlobalAvgPoolU8>(ctx, kAvx2);
}
#endif
#if defined(__aarch64__)
std::unique_ptr<Kernel> create_global_avgpool_u8_neon(const NodeContext& ctx) {
  return std::make_unique<GlobalAvgPoolU8>(ctx, kNeon);
}
#endif

}  // namespace lowbit
