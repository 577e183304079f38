// QAdd driver: same-shape u8 + u8 -> u8 through an elementwise kernel (AVX2 or NEON), split into
// chunks for the pool (elementwise: any split gives the same bytes).
#include <algorithm>
#include <cmath>

#include "lowbit/kernels/qu8-vadd/qu8_vadd.h"
#include "lowbit/operators/operator_util.h"
#include "lowbit/operators/requant.h"
#include "lowbit/operators/qconv2d_u8.h"

namespace lowbit {
namespace {

using ops::clamp_bound;

class QAddU8 final : public Kernel {
 public:
  QAddU8(const NodeContext& ctx, Qu8VaddFn fn) : fn_(fn) {
    const QuantParams& qa = *ctx.in(0).quant;
    const QuantParams& qb = *ctx.in(1).quant;
    const QuantParams& qy = *ctx.out(0).quant;
    const float s_y = qy.scale[0];
    p_.zp_a = qa.zero_point[0];
    p_.zp_b = qb.zero_point[0];
    p_.zp_y = qy.zero_point[0];
    p_.sa = qa.scale[0] / s_y;
    p_.sb = qb.scale[0] / s_y;
    const CodeRange r = code_range(ctx.out(0));
    const int32_t lo = clamp_bound(ctx.node.attrs.get_float("act_min", -INFINITY), s_y, p_.zp_y, r, r.lo);
    const int32_t hi =
        std::max(lo, clamp_bound(ctx.node.attrs.get_float("act_max", INFINITY), s_y, p_.zp_y, r, r.hi));
    p_.qmin = static_cast<float>(lo - p_.zp_y);
    p_.qmax = static_cast<float>(hi - p_.zp_y);
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const int64_t n = out[0].numel(), chunk = 16384, tasks = ops::ceil_div(n, chunk);
    const uint8_t *a = in[0].as<uint8_t>(), *b = in[1].as<uint8_t>();
    uint8_t* y = out[0].as<uint8_t>();
    pool.parallel_for(tasks, [&](int64_t t, int) {
      const int64_t i0 = t * chunk, len = std::min(chunk, n - i0);
      fn_(static_cast<size_t>(len), a + i0, b + i0, y + i0, p_);
    });
  }

 private:
  Qu8VaddFn fn_;
  Qu8AddParams p_;
};

}  // namespace

std::string check_qadd_u8(const NodeContext& ctx) {
  for (auto r : {qops::need_dtype(ctx, 0, "A", DType::u8), qops::need_dtype(ctx, 1, "B", DType::u8)})
    if (!r.empty()) return r;
  if (ctx.out(0).dtype != DType::u8) return std::string("output dtype ") + dtype_name(ctx.out(0).dtype) + ", needs u8";
  if (ctx.in(0).shape != ctx.in(1).shape)
    return "shapes differ (" + shape_str(ctx.in(0).shape) + " vs " + shape_str(ctx.in(1).shape) + "): no broadcasting";
  for (auto r : {qops::need_quant(ctx.in(0), "A", 1), qops::need_quant(ctx.in(1), "B", 1),
                 qops::need_quant(ctx.out(0), "output", 1)})
    if (!r.empty()) return r;
  return "";
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_qadd_u8_avx2(const NodeContext& ctx) { return std::make_unique<QAddU8>(ctx, qu8_vadd__avx2); }
#endif
#if defined(__aarch64__)
std::unique_ptr<Kernel> create_qadd_u8_neon(const NodeContext& ctx) { return std::make_unique<QAddU8>(ctx, qu8_vadd__neon); }
#endif

}  // namespace lowbit
