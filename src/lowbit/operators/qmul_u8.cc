#include "lowbit/operators/qmul_u8.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "lowbit/kernels/qu8-vmul/qu8_vmul.h"
#include "lowbit/operators/operator_util.h"
#include "lowbit/operators/qconv2d_u8.h"
#include "lowbit/operators/requant.h"

namespace lowbit {
namespace {

class QMulU8 final : public Kernel {
 public:
  QMulU8(const NodeContext& ctx, Qu8VmulKernels ks) : ks_(ks) {
    const QuantParams& qa = *ctx.in(0).quant;
    const QuantParams& qb = *ctx.in(1).quant;
    const QuantParams& qy = *ctx.out(0).quant;
    const float s_y = qy.scale[0];
    m_ = qa.scale[0] * qb.scale[0] / s_y;  // the reference's order of operations
    zp_b_ = qb.zero_point[0];
    p_.zp_a = qa.zero_point[0];
    p_.zp_y = qy.zero_point[0];
    const CodeRange r = code_range(ctx.out(0));
    const int32_t lo = ops::clamp_bound(ctx.node.attrs.get_float("act_min", -INFINITY), s_y, p_.zp_y, r, r.lo);
    const int32_t hi =
        std::max(lo, ops::clamp_bound(ctx.node.attrs.get_float("act_max", INFINITY), s_y, p_.zp_y, r, r.hi));
    p_.qmin = static_cast<float>(lo - p_.zp_y);
    p_.qmax = static_cast<float>(hi - p_.zp_y);
    inner_ = num_elements(ctx.out(0).shape) / std::max<int64_t>(1, num_elements(ctx.in(1).shape));
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const uint8_t *a = in[0].as<uint8_t>(), *b = in[1].as<uint8_t>();
    uint8_t* y = out[0].as<uint8_t>();
    const int64_t nb = in[1].numel();
    if (inner_ >= 8) {  // a k per row of inner values: rows in tasks of about 16K values
      const int64_t per = std::max<int64_t>(1, 16384 / inner_), tasks = ops::ceil_div(nb, per);
      pool.parallel_for(tasks, [&](int64_t t, int) {
        for (int64_t r = t * per; r < std::min(nb, (t + 1) * per); ++r)
          ks_.k1(static_cast<size_t>(inner_), a + r * inner_,
                            static_cast<float>(int32_t{b[r]} - zp_b_) * m_, y + r * inner_, p_);
      });
      return;
    }
    constexpr int64_t chunk = 4096;  // its k on the stack
    const int64_t n = out[0].numel(), tasks = ops::ceil_div(n, chunk);
    pool.parallel_for(tasks, [&](int64_t t, int) {
      const int64_t i0 = t * chunk, len = std::min(chunk, n - i0);
      float k[chunk];
      for (int64_t i = 0; i < len; ++i) k[i] = static_cast<float>(int32_t{b[(i0 + i) / inner_]} - zp_b_) * m_;
      ks_.kn(static_cast<size_t>(len), a + i0, k, y + i0, p_);
    });
  }

 private:
  Qu8VmulKernels ks_;
  Qu8MulParams p_;
  float m_ = 1.0f;
  int32_t zp_b_ = 0;
  int64_t inner_ = 1;
};

}  // namespace

std::string check_qmul_u8(const NodeContext& ctx) {
  for (auto r : {qops::need_dtype(ctx, 0, "A", DType::u8), qops::need_dtype(ctx, 1, "B", DType::u8)})
    if (!r.empty()) return r;
  if (ctx.out(0).dtype != DType::u8) return std::string("output dtype ") + dtype_name(ctx.out(0).dtype) + ", needs u8";
  for (auto r : {qops::need_quant(ctx.in(0), "A", 1), qops::need_quant(ctx.in(1), "B", 1),
                 qops::need_quant(ctx.out(0), "output", 1)})
    if (!r.empty()) return r;
  return "";
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_qmul_u8_avx2(const NodeContext& ctx) {
  return std::make_unique<QMulU8>(ctx, Qu8VmulKernels{qu8_vmul_k1__avx2, qu8_vmul_kn__avx2});
}
#endif
#if defined(__aarch64__)
std::unique_ptr<Kernel> create_qmul_u8_neon(const NodeContext& ctx) {
  return std::make_unique<QMulU8>(ctx, Qu8VmulKernels{qu8_vmul_k1__neon, qu8_vmul_kn__neon});
}
#endif

}  // namespace lowbit
