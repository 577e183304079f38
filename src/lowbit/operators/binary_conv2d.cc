#include "lowbit/operators/binary_conv2d.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "lowbit/ir/codes.h"
#include "lowbit/ir/op_params.h"
#include "lowbit/operators/operator_util.h"
#include "lowbit/operators/qconv2d_u8.h"
#include "lowbit/operators/requant.h"

namespace lowbit {
namespace {

Qb1ConvShape qb1_shape(const Conv2dParams& p) {
  Qb1ConvShape s;
  s.C = p.C, s.H = p.H, s.W = p.W, s.M = p.M, s.KH = p.KH, s.KW = p.KW, s.SH = p.SH, s.SW = p.SW, s.DH = p.DH,
  s.DW = p.DW, s.PT = p.pad_top, s.PL = p.pad_left, s.PB = p.pad_bottom, s.PR = p.pad_right;
  return s;
}

constexpr int64_t kMinBinaryChannels = 32;

// What the packed bits stand for.
enum class Input : uint8_t {
  u1,        // QConv: u1 codes, bit 1 where the code is 0
  sign_u8,   // BinaryConv: bit 1 where the u8 code is below the zero point
  sign_f32,  // BinaryConv: bit 1 where the float is negative
  packed,    // BinaryConv: packed signs (b1 activation), read as they are
};
// What the epilogue writes.
enum class Output : uint8_t { u8, f32, signs };

class BinaryConv2d final : public Kernel {
 public:
  BinaryConv2d(const NodeContext& ctx, const Conv2dParams& p, const Qb1GemmKernels& ks)
      : p_(p), ks_(ks), s_(qb1_shape(p)) {
    const bool qconv = ctx.node.op == "QConv";
    const DType xt = ctx.in(0).dtype, yt = ctx.out(0).dtype;
    in_ = qconv ? Input::u1 : xt == DType::u8 ? Input::sign_u8 : xt == DType::b1 ? Input::packed : Input::sign_f32;
    out_ = yt == DType::u8 ? Output::u8 : yt == DType::b1 ? Output::signs : Output::f32;
    const Tensor& wt = *ctx.constant(1);  // b1 packed, or +-1 codes in i8 (w1a1 logical mode)
    std::vector<float> w(static_cast<size_t>(wt.numel()));
    for (int64_t k = 0; k < wt.numel(); ++k)
      w[static_cast<size_t>(k)] = static_cast<float>(load_code(wt.raw(), wt.dtype(), k));
    w_ = pack_b1_weights(s_, w.data(), ks);
    if (in_ == Input::u1) {
      zp_x_ = ctx.in(0).quant->zero_point[0];
      // Padded taps hold zp_x: the value v = 2 * zp_x - 1 (-1 for zp 0, the usual post-ReLU case).
      pad_ = zp_x_ ? B1Padding::plus_one : B1Padding::minus_one;
      // W = sum_k w_k of each output channel: its per-tap sums added up.
      const int64_t taps = p.KH * p.KW;
      w_sum_.assign(static_cast<size_t>(p.M), 0);
      for (int64_t m = 0; m < p.M; ++m)
        for (int64_t t = 0; t < taps; ++t)
          w_sum_[static_cast<size_t>(m)] += w_.tap_sum[static_cast<size_t>(m * taps + t)];
    } else {
      const int64_t v = ctx.node.attrs.get_int("pad_value", 0);
      pad_ = v == 1 ? B1Padding::plus_one : v == -1 ? B1Padding::minus_one : B1Padding::zero;
    }
    if (in_ == Input::sign_u8) zp_x_ = ctx.in(0).quant->zero_point[0];
    if (out_ == Output::u8) {
      rq_.emplace(ctx, p.M, 3, in_ == Input::u1 ? 0.0 : 1.0);  // signs have scale 1
    } else {
      const QuantParams& qw = *ctx.in(1).quant;
      const Tensor* b = ctx.constant(2);
      alpha_.resize(static_cast<size_t>(p.M));
      bias_.assign(static_cast<size_t>(p.M), 0.0f);
      for (int64_t m = 0; m < p.M; ++m) {
        alpha_[static_cast<size_t>(m)] = qw.scale.size() == 1 ? qw.scale[0] : qw.scale[static_cast<size_t>(m)];
        if (b) bias_[static_cast<size_t>(m)] = b->data<float>()[m];
      }
      lo_ = ctx.node.attrs.get_float("act_min", -INFINITY);
      hi_ = ctx.node.attrs.get_float("act_max", INFINITY);
    }
    if (out_ == Output::signs) {
      // fmaf(D, alpha, bias) is non-decreasing in the integer D (alpha > 0), so its sign flips at
      // one integer: thr = the least D in [-K, K + 1] with fmaf(D, alpha, bias) >= 0.
      const int64_t K = p.C * p.KH * p.KW;
      thr_.resize(static_cast<size_t>(p.M));
      for (int64_t m = 0; m < p.M; ++m) {
        const float a = alpha_[static_cast<size_t>(m)], b = bias_[static_cast<size_t>(m)];
        int64_t lo = -K, hi = K + 1;  // answer in [lo, hi]
        while (lo < hi) {
          const int64_t mid = lo + (hi - lo) / 2;
          if (std::fmaf(static_cast<float>(mid), a, b) >= 0.0f) hi = mid;
          else lo = mid + 1;
        }
        thr_[static_cast<size_t>(m)] = static_cast<int32_t>(lo);
      }
    }
    P_ = s_.OH() * s_.OW();
    xbits_floats_ = in_ != Input::packed ? 2 * s_.H * s_.W * s_.CW() : 0;
    if (xbits_floats_) ops::workspace(0, xbits_floats_);  // warm it now, not in the first inference
    chunk_ = std::max<int64_t>(ks.nr, (int64_t{16384} / p.M) / ks.nr * ks.nr);  // 64 KB of int32
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const int64_t HW = p_.H * p_.W, CW = s_.CW();
    const int64_t nr = ks_.nr, panels = (P_ + nr - 1) / nr;
    const int threads = static_cast<int>(std::min<int64_t>(pool.size(), panels));
    // The packed input: workspace slot 0 (the calling thread's, so concurrent runs have their own).
    uint64_t* const xbits = xbits_floats_ ? reinterpret_cast<uint64_t*>(ops::workspace(0, xbits_floats_)) : nullptr;
    for (int64_t b = 0; b < p_.N; ++b) {
      // Packed signs are read as they are; other inputs are packed first, pixels split over threads
      // (a 64-channel input has one word per pixel: splitting words left one thread packing alone).
      if (in_ != Input::packed)
        pool.parallel_for(threads, [&](int64_t t, int) {
          const int64_t p0 = (HW * t) / threads, p1 = (HW * (t + 1)) / threads;
          // u1 inputs are u1 codes by validation (their producer's clamp); anything else counts as 1.
          if (in_ == Input::u1)
            ks_.pack_u1(in[0].as<uint8_t>() + b * p_.C * HW, p_.C, HW, CW, p0, p1, xbits);
          else if (in_ == Input::sign_u8)
            ks_.pack_sign_u8(in[0].as<uint8_t>() + b * p_.C * HW, p_.C, HW, CW, p0, p1, static_cast<uint8_t>(zp_x_),
                             xbits);
          else
            ks_.pack_sign_f32(in[0].as<float>() + b * p_.C * HW, p_.C, HW, CW, p0, p1, xbits);
        });
      pool.parallel_for(threads, [&](int64_t t, int) {
        const int64_t p0 = panels * t / threads * nr, p1 = std::min(P_, panels * (t + 1) / threads * nr);
        // Chunks of pixels whose M x chunk accumulators (<= 64 KB) stay in cache until requantized.
        thread_local std::vector<int32_t> acc;
        acc.resize(static_cast<size_t>(p_.M * chunk_));
        for (int64_t c0 = p0; c0 < p1; c0 += chunk_) {
          const int64_t c1 = std::min(p1, c0 + chunk_);
          const uint64_t* xb = in_ == Input::packed ? static_cast<const uint64_t*>(in[0].data) + b * p_.H * p_.W * CW
                                                    : xbits;
          qb1_conv2d_block(ks_, w_, xb, pad_, acc.data(), static_cast<size_t>(chunk_), c0, c1);
          epilogue(in, out, b, acc.data(), c0, c1);
        }
      });
    }
  }

  int64_t packed_weight_bytes() const override { return static_cast<int64_t>(w_.panels.size() * sizeof(uint64_t)); }

 private:
  // Pixels [c0, c1) of image b from acc[m * chunk_ + (p - c0)] to the output, residual included.
  void epilogue(std::span<const TensorView> in, std::span<const TensorView> out, int64_t b, const int32_t* acc,
                int64_t c0, int64_t c1) const {
    const bool has_res = in.size() > 3 && in[3].data;
    const int64_t MP = p_.M * P_;
    const size_t n = static_cast<size_t>(c1 - c0);
    if (out_ == Output::signs) {
      ks_.signs_out(acc, static_cast<size_t>(chunk_), n, p_.M, thr_.data(),
                    static_cast<uint64_t*>(out[0].data) + (b * P_ + c0) * (p_.M / 64));
      return;
    }
    if (out_ == Output::u8) {
      const uint8_t* rb = has_res ? in[3].as<uint8_t>() + b * MP : nullptr;
      uint8_t* yb = out[0].as<uint8_t>() + b * MP;
      Qb1Requant e;
      e.shift = in_ == Input::u1 ? 1 : 0;  // signs: dot = D
      e.zp_x = in_ == Input::u1 ? zp_x_ : 0;
      e.res_scale = rq_->res_scale, e.res_zp = rq_->res_zp;
      e.qmin = rq_->qmin, e.qmax = rq_->qmax, e.zp_y = rq_->zp_y;
      for (int64_t m = 0; m < p_.M; ++m) {
        e.w_sum = in_ == Input::u1 ? w_sum_[static_cast<size_t>(m)] : 0;
        e.scale = rq_->scale[static_cast<size_t>(m)], e.bias = rq_->bias[static_cast<size_t>(m)];
        e.res = rb ? rb + m * P_ + c0 : nullptr;
        ks_.requant(acc + m * chunk_, n, e, yb + m * P_ + c0);
      }
    } else {
      const float* rb = has_res ? in[3].as<float>() + b * MP : nullptr;
      float* yb = out[0].as<float>() + b * MP;
      Qb1EpilogueF32 e;
      e.lo = lo_, e.hi = hi_;
      for (int64_t m = 0; m < p_.M; ++m) {
        e.alpha = alpha_[static_cast<size_t>(m)], e.bias = bias_[static_cast<size_t>(m)];
        e.res = rb ? rb + m * P_ + c0 : nullptr;
        ks_.epilogue_f32(acc + m * chunk_, n, e, yb + m * P_ + c0);
      }
    }
  }

  Conv2dParams p_;
  const Qb1GemmKernels& ks_;
  Qb1ConvShape s_;
  Input in_ = Input::u1;
  Output out_ = Output::u8;
  std::vector<int32_t> thr_;  // signs
  B1Padding pad_ = B1Padding::zero;
  Qb1PackedWeights w_;
  std::vector<int32_t> w_sum_;      // u1
  std::optional<ops::Requant> rq_;  // u1, sign_u8
  int32_t zp_x_ = 0;
  std::vector<float> alpha_, bias_;  // f32
  float lo_ = 0.0f, hi_ = 0.0f;
  int64_t P_ = 0;
  int64_t chunk_ = 0;  // output pixels per block, a multiple of the tile's nr
  int64_t xbits_floats_ = 0;  // the packed input's words, in float-sized workspace
};

std::string check_binary_conv2d(const NodeContext& ctx, DType x) {
  if (ctx.in(0).dtype != x)
    return std::string("input ") + dtype_name(ctx.in(0).dtype) + ", this kernel reads " + dtype_name(x);
  if (!ctx.constant(1) || ctx.constant(1)->dtype() != DType::b1) return "weights are not b1 constants";
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  if (p.group != 1) return "group " + std::to_string(p.group) + ": channels are packed across the whole input";
  // Unlike the w1a1 QConv rows (which refuse C < 32 where the int8 kernel is faster), every C is
  // taken: a binarised input has no int8 codes to fall back to, and the reference is far slower.
  return check_qb1_conv_shape(qb1_shape(p));
}

}  // namespace

std::string check_qconv2d_qu1_qb1w_xnor(const NodeContext& ctx) {
  if (std::string r = check_qconv2d_u8_igemm(ctx); !r.empty()) return r;  // dtypes, constants, quant params
  if (code_dtype(ctx.in(1)) != DType::b1)
    return std::string("weight codes ") + dtype_name(code_dtype(ctx.in(1))) + ", needs b1";
  if (code_dtype(ctx.in(0)) != DType::u1)
    return std::string("input codes ") + dtype_name(code_dtype(ctx.in(0))) + ", needs u1";
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  if (p.group != 1) return "group " + std::to_string(p.group) + ": channels are packed across the whole input";
  // One 64-bit word per tap costs the same for any C <= 64, so few channels waste most of it.
  // Measured against the int8 kernel on 3x3 64-output convs at 56x56 (AVX2, Zen 3, 1 thread,
  // bench/microbench/qb1_layers --all): C = 8 0.6x, C = 16 0.8x, C = 32 1.2x, C = 64 2.0x.
  if (p.C < kMinBinaryChannels)
    return "C = " + std::to_string(p.C) + " input channels (< " + std::to_string(kMinBinaryChannels) +
           "): a 64-bit word per tap, mostly empty, measured 0.6x (C = 8) and 0.8x (C = 16) of the int8 kernel";
  return check_qb1_conv_shape(qb1_shape(p));
}

std::string check_binary_conv2d_f32(const NodeContext& ctx) { return check_binary_conv2d(ctx, DType::f32); }
std::string check_binary_conv2d_qu8(const NodeContext& ctx) { return check_binary_conv2d(ctx, DType::u8); }
std::string check_binary_conv2d_qb1(const NodeContext& ctx) { return check_binary_conv2d(ctx, DType::b1); }

std::unique_ptr<Kernel> create_binary_conv2d(const NodeContext& ctx, const Qb1GemmKernels& ks) {
  return std::make_unique<BinaryConv2d>(ctx, conv2d_params(ctx.graph, ctx.node), ks);
}

std::unique_ptr<Kernel> create_binary_conv2d_portable(const NodeContext& ctx) {
  return create_binary_conv2d(ctx, *qb1_gemm_kernels_portable());
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_binary_conv2d_avx2(const NodeContext& ctx) {
  return create_binary_conv2d(ctx, *qb1_gemm_kernels_avx2());
}
std::unique_ptr<Kernel> create_binary_conv2d_avx512vpopcntdq(const NodeContext& ctx) {
  return create_binary_conv2d(ctx, *qb1_gemm_kernels_avx512popcnt());
}
#endif

#if defined(__aarch64__)
std::unique_ptr<Kernel> create_binary_conv2d_neon(const NodeContext& ctx) {
  return create_binary_conv2d(ctx, *qb1_gemm_kernels_neon());
}
#endif

}  // namespace lowbit
