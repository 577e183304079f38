#include "lowbit/operators/qlut_u8.h"

#include <cstring>

#include "lowbit/kernels/qu8-lut/qu8_lut.h"
#include "lowbit/operators/operator_util.h"

namespace lowbit {
namespace {

class QLut final : public Kernel {
 public:
  QLut(const NodeContext& ctx, Qu8LutFn fn) : fn_(fn) { std::memcpy(table_, ctx.constant(1)->data<uint8_t>(), 256); }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const uint8_t* x = in[0].as<uint8_t>();
    uint8_t* y = out[0].as<uint8_t>();
    const int64_t n = out[0].numel();
    // 64 KB per task: the scalar lookup costs about a cycle per byte, so smaller tasks would spend
    // as much on scheduling as on lookups (and the SIMD rows are memory-bound well before).
    constexpr int64_t kChunk = 64 * 1024;
    pool.parallel_for(ops::ceil_div(n, kChunk), [&](int64_t t, int) {
      const int64_t lo = t * kChunk, hi = std::min(n, lo + kChunk);
      fn_(static_cast<size_t>(hi - lo), x + lo, y + lo, table_);
    });
  }

 private:
  Qu8LutFn fn_;
  alignas(64) uint8_t table_[256];
};

}  // namespace

std::string check_qlut_u8(const NodeContext& ctx) {
  if (ctx.in(0).dtype != DType::u8 || ctx.out(0).dtype != DType::u8) return "needs u8 input and output";
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
