#include "lowbit/operators/pool2d_b1.h"

#include <algorithm>

#include "lowbit/ir/codes.h"
#include "lowbit/ir/op_params.h"

namespace lowbit {
namespace {

class MaxPoolB1 final : public Kernel {
 public:
  explicit MaxPoolB1(const Pool2dParams& p) : p_(p), cw_(p.C / kSignWordBits) {}

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const uint64_t* x = static_cast<const uint64_t*>(in[0].data);
    uint64_t* y = static_cast<uint64_t*>(out[0].data);
    const int64_t rows = p_.N * p_.OH;
    const int threads = static_cast<int>(std::min<int64_t>(pool.size(), rows));
    pool.parallel_for(threads, [&](int64_t t, int) {
      for (int64_t r = rows * t / threads; r < rows * (t + 1) / threads; ++r) {
        const int64_t b = r / p_.OH, oh = r % p_.OH;
        for (int64_t ow = 0; ow < p_.OW; ++ow) {
          uint64_t* dst = y + ((b * p_.OH + oh) * p_.OW + ow) * cw_;
          std::fill(dst, dst + cw_, ~uint64_t{0});
          for (int64_t kh = 0; kh < p_.KH; ++kh) {
            const int64_t ih = oh * p_.SH - p_.pad_top + kh * p_.DH;
            if (ih < 0 || ih >= p_.H) continue;
            for (int64_t kw = 0; kw < p_.KW; ++kw) {
              const int64_t iw = ow * p_.SW - p_.pad_left + kw * p_.DW;
              if (iw < 0 || iw >= p_.W) continue;
              const uint64_t* src = x + ((b * p_.H + ih) * p_.W + iw) * cw_;
              for (int64_t w = 0; w < cw_; ++w) dst[w] &= src[w];
            }
          }
        }
      }
    });
  }

 private:
  Pool2dParams p_;
  int64_t cw_;
};

}  // namespace

std::string check_maxpool2d_b1(const NodeContext& ctx) {
  if (ctx.in(0).dtype != DType::b1) return std::string("input dtype ") + dtype_name(ctx.in(0).dtype) + ", needs b1";
  if (ctx.node.outputs.size() > 1 && ctx.node.outputs[1] != kNoValue) return "Indices output unsupported";
  const Pool2dParams p = pool2d_params(ctx.graph, ctx.node);
  // A window with no tap inside the input (ceil_mode overhang) would be max(-inf) here: never
  // produced by the geometry, but refused rather than guessed.
  if (p.KH <= p.pad_top || p.KW <= p.pad_left) return "a window could lie entirely in the padding";
  return "";
}

std::unique_ptr<Kernel> create_maxpool2d_b1(const NodeContext& ctx) {
  return std::make_unique<MaxPoolB1>(pool2d_params(ctx.graph, ctx.node));
}

}  // namespace lowbit
