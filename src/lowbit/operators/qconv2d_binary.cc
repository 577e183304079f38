#include "lowbit/operators/qconv2d_binary.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "lowbit/ir/codes.h"
#include "lowbit/ir/op_params.h"
#include "lowbit/operators/operator_util.h"
#include "lowbit/operators/qconv2d_u8.h"
#include "lowbit/operators/requant.h"

namespace lowbit {
namespace {

constexpr int64_t kMinBinaryChannels = 32;

Qb1ConvShape qb1_shape(const Conv2dParams& p) {
  Qb1ConvShape s;
  s.C = p.C, s.H = p.H, s.W = p.W, s.M = p.M, s.KH = p.KH, s.KW = p.KW, s.SH = p.SH, s.SW = p.SW, s.DH = p.DH,
  s.DW = p.DW, s.PT = p.pad_top, s.PL = p.pad_left, s.PB = p.pad_bottom, s.PR = p.pad_right;
  return s;
}

class QConv2dBinary final : public Kernel {
 public:
  QConv2dBinary(const NodeContext& ctx, const Conv2dParams& p, const Qb1GemmKernels& ks)
      : p_(p), ks_(ks), rq_(ctx, p.M, 3) {
    zp_x_ = ctx.in(0).quant->zero_point[0];
    s_ = qb1_shape(p);
    const Tensor& wt = *ctx.constant(1);  // b1 packed, or +-1 codes in i8 (logical mode)
    std::vector<float> w(static_cast<size_t>(wt.numel()));
    for (int64_t k = 0; k < wt.numel(); ++k) w[static_cast<size_t>(k)] = static_cast<float>(load_code(wt.raw(), wt.dtype(), k));
    w_ = pack_b1_weights(s_, w.data(), ks);
    // W = sum_k w_k of each output channel: its per-tap sums added up.
    const int64_t taps = p.KH * p.KW;
    w_sum_.assign(static_cast<size_t>(p.M), 0);
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t t = 0; t < taps; ++t) w_sum_[static_cast<size_t>(m)] += w_.tap_sum[static_cast<size_t>(m * taps + t)];
    P_ = s_.OH() * s_.OW();
    xbits_.resize(static_cast<size_t>(s_.H * s_.W * s_.CW()));
    acc_.resize(static_cast<size_t>(p.M * P_));
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) override {
    const uint8_t* x = in[0].as<uint8_t>();
    const uint8_t* res = in.size() > 3 && in[3].data ? in[3].as<uint8_t>() : nullptr;
    uint8_t* y = out[0].as<uint8_t>();
    const int64_t HW = p_.H * p_.W, CW = s_.CW();
    // Padded taps hold zp_x: the value v = 2 * zp_x - 1 (-1 for zp 0, the usual post-ReLU case).
    const B1Padding pad = zp_x_ ? B1Padding::plus_one : B1Padding::minus_one;
    const int64_t nr = ks_.nr, panels = (P_ + nr - 1) / nr;
    const int threads = static_cast<int>(std::min<int64_t>(pool.size(), panels));
    for (int64_t b = 0; b < p_.N; ++b) {
      // Channel-pack the u1 codes: bit 1 (v = -1) where x = 0. Inputs are u1 codes by validation
      // (their producer's clamp); anything else would count as 1.
      const uint8_t* xb = x + b * p_.C * HW;
      pool.parallel_for(threads, [&](int64_t t, int) {
        ks_.pack_u1(xb, p_.C, HW, CW, (CW * t) / threads, (CW * (t + 1)) / threads, xbits_.data());
      });
      const uint8_t* rb = res ? res + b * p_.M * P_ : nullptr;
      uint8_t* yb = y + b * p_.M * P_;
      pool.parallel_for(threads, [&](int64_t t, int) {
        const int64_t p0 = panels * t / threads * nr, p1 = std::min(P_, panels * (t + 1) / threads * nr);
        if (p0 >= p1) return;
        qb1_conv2d(ks_, w_, xbits_.data(), pad, acc_.data(), p0, p1);
        Qb1Requant e;
        e.zp_x = zp_x_;
        e.res_scale = rq_.res_scale, e.res_zp = rq_.res_zp;
        e.qmin = rq_.qmin, e.qmax = rq_.qmax, e.zp_y = rq_.zp_y;
        for (int64_t m = 0; m < p_.M; ++m) {
          e.w_sum = w_sum_[static_cast<size_t>(m)];
          e.scale = rq_.scale[static_cast<size_t>(m)], e.bias = rq_.bias[static_cast<size_t>(m)];
          e.res = rb ? rb + m * P_ + p0 : nullptr;
          ks_.requant(acc_.data() + m * P_ + p0, static_cast<size_t>(p1 - p0), e, yb + m * P_ + p0);
        }
      });
    }
  }

  int64_t packed_weight_bytes() const override { return static_cast<int64_t>(w_.panels.size() * sizeof(uint64_t)); }

 private:
  Conv2dParams p_;
  const Qb1GemmKernels& ks_;
  ops::Requant rq_;
  Qb1ConvShape s_;
  Qb1PackedWeights w_;
  std::vector<int32_t> w_sum_;
  int32_t zp_x_ = 0;
  int64_t P_ = 0;
  std::vector<uint64_t> xbits_;
  std::vector<int32_t> acc_;
};

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
  if (std::string r = check_qb1_conv_shape(qb1_shape(p)); !r.empty()) return r;
  return "";
}

std::unique_ptr<Kernel> create_qconv2d_qu1_qb1w_xnor(const NodeContext& ctx, const Qb1GemmKernels& ks) {
  return std::make_unique<QConv2dBinary>(ctx, conv2d_params(ctx.graph, ctx.node), ks);
}

std::unique_ptr<Kernel> create_qconv2d_qu1_qb1w_xnor_portable(const NodeContext& ctx) {
  return create_qconv2d_qu1_qb1w_xnor(ctx, *qb1_gemm_kernels_portable());
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_qconv2d_qu1_qb1w_xnor_avx2(const NodeContext& ctx) {
  return create_qconv2d_qu1_qb1w_xnor(ctx, *qb1_gemm_kernels_avx2());
}
std::unique_ptr<Kernel> create_qconv2d_qu1_qb1w_xnor_avx512vpopcntdq(const NodeContext& ctx) {
  return create_qconv2d_qu1_qb1w_xnor(ctx, *qb1_gemm_kernels_avx512popcnt());
}
#endif

#if defined(__aarch64__)
std::unique_ptr<Kernel> create_qconv2d_qu1_qb1w_xnor_neon(const NodeContext& ctx) {
  return create_qconv2d_qu1_qb1w_xnor(ctx, *qb1_gemm_kernels_neon());
}
#endif

}  // namespace lowbit
