#include "lowbit/operators/depth_to_space.h"

#include <cstring>

#include "lowbit/operators/operator_util.h"

namespace lowbit {
namespace {

// dst[w b + j] = rows[j][w] for j < b: the b rows of one block row, interleaved.
template <class T, int B>
void interleave(const T* const* rows, int64_t W, int64_t b, T* dst) {
  const int64_t k = B ? B : b;
  for (int64_t w = 0; w < W; ++w)
    for (int64_t j = 0; j < k; ++j) dst[w * k + j] = rows[j][w];
}

template <class T>
void interleave_any(const T* const* rows, int64_t W, int64_t b, T* dst) {
  if (b == 2) interleave<T, 2>(rows, W, b, dst);
  else interleave<T, 0>(rows, W, b, dst);
}

class DepthToSpace final : public Kernel {
 public:
  explicit DepthToSpace(const NodeContext& ctx)
      : x_(ctx.in(0).shape), b_(ctx.node.attrs.get_int("blocksize", 1)),
        crd_(ctx.node.attrs.get_string("mode", "DCR") == "CRD"), elem_(static_cast<size_t>(storage_bytes(ctx.in(0).dtype, 1))) {}

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const int64_t N = x_[0], C = x_[1], H = x_[2], W = x_[3], b = b_, OC = C / (b * b), OW = W * b;
    const auto* x = static_cast<const uint8_t*>(in[0].data);
    auto* y = static_cast<uint8_t*>(out[0].data);
    // A task is one input row h of one output channel: b output rows.
    pool.parallel_for(N * OC * H, [&](int64_t t, int) {
      const int64_t h = t % H, c = (t / H) % OC, n = t / (H * OC);
      for (int64_t i = 0; i < b; ++i) {
        const uint8_t* rows[16];
        for (int64_t j = 0; j < b; ++j) {
          const int64_t ic = crd_ ? c * b * b + i * b + j : (i * b + j) * OC + c;
          rows[j] = x + (((n * C + ic) * H + h) * W) * elem_;
        }
        uint8_t* dst = y + (((n * OC + c) * H * b + h * b + i) * OW) * elem_;
        if (elem_ == 4) interleave_any(reinterpret_cast<const float* const*>(rows), W, b, reinterpret_cast<float*>(dst));
        else if (elem_ == 1) interleave_any(rows, W, b, dst);
        else
          for (int64_t w = 0; w < W; ++w)
            for (int64_t j = 0; j < b; ++j) std::memcpy(dst + (w * b + j) * elem_, rows[j] + w * elem_, elem_);
      }
    });
  }

 private:
  Shape x_;
  int64_t b_;
  bool crd_;
  size_t elem_;
};

}  // namespace

std::string check_depth_to_space(const NodeContext& ctx) {
  const int64_t b = ctx.node.attrs.get_int("blocksize", 1);
  if (b > 16) return "blocksize " + std::to_string(b) + " > 16";
  return "";
}

std::unique_ptr<Kernel> create_depth_to_space(const NodeContext& ctx) { return std::make_unique<DepthToSpace>(ctx); }

}  // namespace lowbit
