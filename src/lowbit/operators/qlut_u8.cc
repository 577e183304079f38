#include "lowbit/operators/qlut_u8.h"

#include <algorithm>
#include <vector>

#include "lowbit/ir/channel_table.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/kernels/qu8-lut/qu8_lut.h"
#include "lowbit/operators/operator_util.h"

namespace lowbit {
namespace {

// 64 KB per task: the scalar lookup costs about a cycle per byte, so smaller tasks would spend as
// much on scheduling as on lookups (and the SIMD rows are memory-bound well before).
constexpr int64_t kChunk = 64 * 1024;

// Whether the node maps codes per channel (a BatchNormalization: tables derived, ir/channel_table.h).
bool per_channel(const NodeContext& ctx) { return channel_map(ctx.node.attrs.get_string("op", "")); }

class QLut final : public Kernel {
 public:
  QLut(const NodeContext& ctx, Qu8LutFn fn) : fn_(fn) {
    if (!per_channel(ctx)) {
      const Tensor& t = *ctx.constant(1);
      table_.assign(t.data<uint8_t>(), t.data<uint8_t>() + t.numel());
    } else {
      table_ = channel_table(ctx.graph, ctx.node);
      const Shape& x = ctx.in(0).shape;
      channels_ = x[1];
      for (size_t d = 2; d < x.size(); ++d) plane_ *= x[d];
    }
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const uint8_t* x = in[0].as<uint8_t>();
    uint8_t* y = out[0].as<uint8_t>();
    const int64_t n = out[0].numel();
    if (channels_ == 0) {
      pool.parallel_for(ops::ceil_div(n, kChunk), [&](int64_t t, int) {
        const int64_t lo = t * kChunk, hi = std::min(n, lo + kChunk);
        fn_(static_cast<size_t>(hi - lo), x + lo, y + lo, table_.data());
      });
      return;
    }
    // Per channel: whole planes, each with its channel's table, about 64 KB of them per task (one
    // plane at least: DenseNet-121's are 3136 to 49 bytes).
    if (plane_ == 0) return;
    const int64_t planes = n / plane_, per_task = std::max<int64_t>(1, kChunk / plane_);
    pool.parallel_for(ops::ceil_div(planes, per_task), [&](int64_t t, int) {
      const int64_t p1 = std::min(planes, (t + 1) * per_task);
      for (int64_t p = t * per_task; p < p1; ++p)
        fn_(static_cast<size_t>(plane_), x + p * plane_, y + p * plane_, table_.data() + p % channels_ * 256);
    });
  }

 private:
  Qu8LutFn fn_;
  std::vector<uint8_t> table_;  // 256 codes, or 256 per channel (derived, ir/channel_table.h)
  int64_t channels_ = 0, plane_ = 1;
};

}  // namespace

std::string check_qlut_u8(const NodeContext& ctx) {
  if (ctx.in(0).dtype != DType::u8 || ctx.out(0).dtype != DType::u8) return "needs u8 input and output";
  if (per_channel(ctx)) return channel_table_unavailable(ctx.graph, ctx.node);
  const Tensor* t = ctx.constant(1);
  if (!t || t->dtype() != DType::u8 || t->numel() != 256) return "needs a constant 256-entry u8 table";
  return "";
}

std::unique_ptr<Kernel> create_qlut_u8_scalar(const NodeContext& ctx) {
  return std::make_unique<QLut>(ctx, qu8_lut__scalar);
}
#if defined(__x86_64__)
std::unique_ptr<Kernel> create_qlut_u8_avx2(const NodeContext& ctx) { return std::make_unique<QLut>(ctx, qu8_lut__avx2); }
std::unique_ptr<Kernel> create_qlut_u8_avx512vbmi(const NodeContext& ctx) {
  return std::make_unique<QLut>(ctx, qu8_lut__avx512vbmi);
}
#endif
#if defined(__aarch64__)
std::unique_ptr<Kernel> create_qlut_u8_neon(const NodeContext& ctx) { return std::make_unique<QLut>(ctx, qu8_lut__neon); }
#endif

}  // namespace lowbit
