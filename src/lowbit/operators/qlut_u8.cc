#include "lowbit/operators/qlut_u8.h"

#include <cstring>

#include "lowbit/operators/operator_util.h"

namespace lowbit {
namespace {

class QLut final : public Kernel {
 public:
  explicit QLut(const NodeContext& ctx) { std::memcpy(table_, ctx.constant(1)->data<uint8_t>(), 256); }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const uint8_t* x = in[0].as<uint8_t>();
    uint8_t* y = out[0].as<uint8_t>();
    const int64_t n = out[0].numel();
    // 64 KB per task: a table lookup costs about a cycle per byte, so smaller tasks would spend
    // as much on scheduling as on lookups.
    constexpr int64_t kChunk = 64 * 1024;
    pool.parallel_for(ops::ceil_div(n, kChunk), [&](int64_t t, int) {
      const int64_t lo = t * kChunk, hi = std::min(n, lo + kChunk);
      const uint8_t* tab = table_;  // a local copy of the pointer: the stores cannot move it
      for (int64_t i = lo; i < hi; ++i) y[i] = tab[x[i]];
    });
  }

 private:
  uint8_t table_[256];
};

}  // namespace

std::string check_qlut_u8(const NodeContext& ctx) {
  if (ctx.in(0).dtype != DType::u8 || ctx.out(0).dtype != DType::u8) return "needs u8 input and output";
  const Tensor* t = ctx.constant(1);
  if (!t || t->dtype() != DType::u8 || t->numel() != 256) return "needs a constant 256-entry u8 table";
  return "";
}

std::unique_ptr<Kernel> create_qlut_u8(const NodeContext& ctx) { return std::make_unique<QLut>(ctx); }

}  // namespace lowbit
