#include "lowbit/operators/resize_f32.h"

#include <cmath>
#include <cstring>

#include "lowbit/common/error.h"
#include "lowbit/operators/operator_util.h"

namespace lowbit {
namespace {

struct Factors {
  int64_t fh = 0, fw = 0;
};

// The whole factors of a rank-4 nearest Resize whose output pixel (y, x) reads input (y / fh, x / fw),
// or why the node is not one.
std::string factors_of(const NodeContext& ctx, Factors& f) {
  const Attributes& a = ctx.node.attrs;
  const std::string mode = a.get_string("mode", "nearest");
  const std::string ctm = a.get_string("coordinate_transformation_mode", "half_pixel");
  const std::string nm = a.get_string("nearest_mode", "round_prefer_floor");
  if (ctx.in(0).dtype != DType::f32) return "input dtype " + std::string(dtype_name(ctx.in(0).dtype)) + ", needs f32";
  if (mode != "nearest") return "mode '" + mode + "', needs nearest";
  if (ctm != "asymmetric") return "coordinate_transformation_mode '" + ctm + "', needs asymmetric";
  const Shape &x = ctx.in(0).shape, &y = ctx.out(0).shape;
  if (x.size() != 4) return "rank " + std::to_string(x.size()) + ", needs 4";
  if (x[0] != y[0] || x[1] != y[1]) return "resizes N or C";
  if (y[2] % x[2] != 0 || y[3] % x[3] != 0)
    return "output " + shape_str(y) + " is not a whole multiple of the input " + shape_str(x);
  f.fh = y[2] / x[2], f.fw = y[3] / x[3];
  // The scales input, if given, must be those factors (ONNX maps with the given scale, not the
  // rounded output size).
  if (const Tensor* s = ctx.has_input(2) ? ctx.constant(2) : nullptr; s && s->numel() == 4) {
    const float* sc = s->data<float>();
    if (sc[0] != 1.0f || sc[1] != 1.0f || sc[2] != float(f.fh) || sc[3] != float(f.fw))
      return "scales are not the whole factors of the output size";
  } else if (ctx.has_input(2) && ctx.in(2).shape.size() == 1 && ctx.in(2).shape[0] > 0) {
    return "scales are not constant";
  }
  // floor(x / f) for every nearest_mode rounding that agrees with it at these factors: at factor 2
  // the fractions are 0 and 1/2, which round_prefer_floor also sends down.
  const bool floor_like = nm == "floor" || (nm == "round_prefer_floor" && f.fh <= 2 && f.fw <= 2);
  if (!floor_like) return "nearest_mode '" + nm + "' at factors " + std::to_string(f.fh) + "x" + std::to_string(f.fw);
  return "";
}

template <int FW>
void widen_row(const float* src, int64_t w, int64_t fw, float* dst) {
  const int64_t k = FW ? FW : fw;
  for (int64_t i = 0; i < w; ++i)
    for (int64_t j = 0; j < k; ++j) dst[i * k + j] = src[i];
}

class ResizeNearestInt final : public Kernel {
 public:
  ResizeNearestInt(const NodeContext& ctx, Factors f) : f_(f), x_(ctx.in(0).shape) {}

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    const int64_t H = x_[2], W = x_[3], OW = W * f_.fw, planes = x_[0] * x_[1];
    // A task is one input row of one plane: fh output rows.
    pool.parallel_for(planes * H, [&](int64_t t, int) {
      const float* src = x + t * W;
      float* dst = y + t * f_.fh * OW;
      if (f_.fw == 1) std::memcpy(dst, src, static_cast<size_t>(W) * sizeof(float));
      else if (f_.fw == 2) widen_row<2>(src, W, 2, dst);
      else if (f_.fw == 4) widen_row<4>(src, W, 4, dst);
      else widen_row<0>(src, W, f_.fw, dst);
      for (int64_t r = 1; r < f_.fh; ++r) std::memcpy(dst + r * OW, dst, static_cast<size_t>(OW) * sizeof(float));
    });
  }

 private:
  Factors f_;
  Shape x_;
};

}  // namespace

std::string check_resize_f32_nearest_int(const NodeContext& ctx) {
  Factors f;
  return factors_of(ctx, f);
}

std::unique_ptr<Kernel> create_resize_f32_nearest_int(const NodeContext& ctx) {
  Factors f;
  if (std::string why = factors_of(ctx, f); !why.empty()) throw Error("node " + ctx.node.label() + ": " + why);
  return std::make_unique<ResizeNearestInt>(ctx, f);
}

}  // namespace lowbit
