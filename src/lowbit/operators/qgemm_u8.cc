// QGemm driver (fully connected, A [M, K] u8 x W [N, K]^T i8): per row of A, the activations are
// widened once to int16 (x - zp_x) and every output channel is one int16 x int8 dot product
// (kernels/qu8-gemv, one function per ISA). At M = 1 the layer is bound by reading the i8 weights,
// which stay i8 (K padded to 16 with zeros at creation). The epilogue is the contract's scalar
// formula.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "lowbit/kernels/qu8-gemv/qu8_gemv.h"
#include "lowbit/operators/operator_util.h"
#include "lowbit/operators/requant.h"
#include "lowbit/operators/qconv2d_u8.h"

namespace lowbit {
namespace {

using ops::ceil_div;

class QGemmGemv final : public Kernel {
 public:
  QGemmGemv(const NodeContext& ctx, Qu8GemvAcc gemv) : gemv_(gemv), rq_(ctx, ctx.in(1).shape[0], -1) {
    const QuantParams& qx = *ctx.in(0).quant;
    K_ = ctx.in(0).shape[1];
    N_ = ctx.in(1).shape[0];
    Kp_ = ceil_div(K_, 16) * 16;
    zp_x_ = qx.zero_point[0];
    weights_ = Tensor(DType::i8, {N_ * Kp_});
    const Tensor w_i8 = ops::weights_i8(ctx);  // sub-byte codes unpacked once
    const int8_t* w = w_i8.data<int8_t>();
    for (int64_t n = 0; n < N_; ++n)
      std::memcpy(weights_.data<int8_t>() + n * Kp_, w + n * K_, static_cast<size_t>(K_));
    act_min_ = ctx.node.attrs.get_float("act_min", -INFINITY);
    act_max_ = ctx.node.attrs.get_float("act_max", INFINITY);
    lo_ = static_cast<int32_t>(rq_.qmin) + rq_.zp_y;
    hi_ = static_cast<int32_t>(rq_.qmax) + rq_.zp_y;
  }

  int64_t packed_weight_bytes() const override { return weights_.nbytes() + 8 * N_; }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const int64_t M = in[0].shape[0];
    const uint8_t* x = in[0].as<uint8_t>();
    // Tasks: rows x channel chunks of 64 (a few hundred tasks at most for a classifier).
    const int64_t chunk = 64, nchunks = ceil_div(N_, chunk);
    float* const* scratch = ops::per_thread_workspace(pool.size(), (Kp_ * 2 + chunk * 4) / 4 + 16);
    pool.parallel_for(M * nchunks, [&](int64_t t, int thread) {
      const int64_t m = t / nchunks, n0 = (t % nchunks) * chunk, nn = std::min(chunk, N_ - n0);
      int16_t* a = reinterpret_cast<int16_t*>(scratch[thread]);
      int32_t* acc = reinterpret_cast<int32_t*>(a + Kp_);
      const uint8_t* xr = x + m * K_;
      for (int64_t k = 0; k < Kp_; ++k) a[k] = static_cast<int16_t>(k < K_ ? int32_t{xr[k]} - zp_x_ : 0);
      gemv_(static_cast<size_t>(Kp_), a, weights_.data<int8_t>() + n0 * Kp_, static_cast<size_t>(Kp_),
            static_cast<size_t>(nn), acc);
      for (int64_t j = 0; j < nn; ++j) {
        const size_t n = static_cast<size_t>(n0 + j);
        const float v = std::fmaf(static_cast<float>(acc[j]), rq_.scale[n], rq_.bias[n]);
        if (rq_.f32_out) {
          out[0].as<float>()[m * N_ + n0 + j] = std::min(std::max(v, act_min_), act_max_);
        } else {
          float r = std::min(std::max(std::nearbyintf(v), -1e6f), 1e6f);
          out[0].as<uint8_t>()[m * N_ + n0 + j] =
              static_cast<uint8_t>(std::clamp(static_cast<int32_t>(r) + rq_.zp_y, lo_, hi_));
        }
      }
    });
  }

 private:
  Qu8GemvAcc gemv_;
  ops::Requant rq_;
  int64_t K_ = 0, N_ = 0, Kp_ = 0;
  int32_t zp_x_ = 0, lo_ = 0, hi_ = 255;
  float act_min_ = 0.0f, act_max_ = 0.0f;  // f32 output: the clamp in real units
  Tensor weights_;
};

}  // namespace

std::string check_qgemm_u8_gemv(const NodeContext& ctx) {
  using qops::need_dtype;
  for (auto r : {need_dtype(ctx, 0, "input", DType::u8), qops::need_weights(ctx),
                 need_dtype(ctx, 2, "bias", DType::f32), ops::need_constant(ctx, 1, "weights"),
                 ops::need_constant(ctx, 2, "bias")})
    if (!r.empty()) return r;
  if (ctx.in(0).shape.size() != 2 || ctx.in(1).shape.size() != 2)
    return "needs 2-D A [M, K] and B [N, K], got " + shape_str(ctx.in(0).shape) + " and " + shape_str(ctx.in(1).shape);
  if (ctx.node.attrs.get_int("transA", 0) != 0 || ctx.node.attrs.get_int("transB", 1) != 1)
    return "needs transA=0, transB=1";
  const DType out = ctx.out(0).dtype;
  if (out != DType::u8 && out != DType::f32) return std::string("output dtype ") + dtype_name(out) + ", needs u8 or f32";
  for (auto r : {qops::need_quant(ctx.in(0), "input", 1),
                 qops::need_quant(ctx.in(1), "weights", static_cast<size_t>(ctx.in(1).shape[0])),
                 out == DType::u8 ? qops::need_quant(ctx.out(0), "output", 1) : std::string()})
    if (!r.empty()) return r;
  for (int32_t z : ctx.in(1).quant->zero_point)
    if (z != 0) return "weights zero point " + std::to_string(z) + ", needs symmetric (0)";
  return "";
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_qgemm_u8_gemv_avx2(const NodeContext& ctx) {
  return std::make_unique<QGemmGemv>(ctx, qu8_gemv_acc__avx2);
}
#endif

#if defined(__aarch64__)
std::unique_ptr<Kernel> create_qgemm_u8_gemv_neon(const NodeContext& ctx) {
  return std::make_unique<QGemmGemv>(ctx, qu8_gemv_acc__neon);
}
#endif

}  // namespace lowbit
