// fp32 fully connected: Y[rows, N] = A[rows, K] * B[K, N] (+ bias[N]), clamped. B is packed
// once into K x NR column panels (alpha folded in), so for batch 1 the layer is one sequential
// stream over the weights split across threads by column panels; the activations are packed
// into K x MR row panels per inference (rows = 1 needs no packing). MR x NR is the ISA's tile
// (F32GemmKernels). Each output is computed by
// one micro-kernel call over the whole K, so results do not depend on the thread count.
#include "lowbit/operators/fully_connected_f32.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "lowbit/operators/conv2d_f32.h"
#include "lowbit/operators/operator_util.h"

namespace lowbit {
namespace {

using ops::ceil_div;

constexpr int64_t kPanelsPerTask = 4;

class FullyConnectedF32 final : public Kernel {
 public:
  // b(k, n) = B[k * ldbk + n * ldbn] * alpha; bias(n) = bias[n * bias_step] * beta.
  FullyConnectedF32(int64_t rows, int64_t K, int64_t N, bool trans_a, const float* B, int64_t ldbk, int64_t ldbn,
                    float alpha, const float* bias, int64_t bias_step, float beta, float act_min, float act_max,
                    const F32GemmKernels& ks)
      : rows_(rows), K_(K), N_(N), trans_a_(trans_a), act_min_(act_min), act_max_(act_max), ks_(ks), mr_(ks.mr),
        nr_(ks.nr) {
    npanels_ = ceil_div(N, nr_);
    packed_ = PackedWeights(npanels_ * K * nr_);
    float* pb = packed_.data();
    for (int64_t p = 0; p < npanels_; ++p) {
      const int64_t n0 = p * nr_, nr = panel_nr(p);
      float* dst = pb + p * K * nr_;
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < nr; ++j) dst[k * nr + j] = n0 + j < N ? B[k * ldbk + (n0 + j) * ldbn] * alpha : 0.0f;
    }
    bias_ = Tensor(DType::f32, {npanels_ * nr_});
    if (bias)
      for (int64_t n = 0; n < N; ++n) bias_.data<float>()[n] = bias[n * bias_step] * beta;
    has_bias_ = bias != nullptr;
    apack_floats_ = rows > 1 || trans_a ? ceil_div(rows, mr_) * mr_ * K : 0;
    if (apack_floats_) ops::workspace(0, apack_floats_);  // warm it now, not in the first inference
  }

  int64_t packed_weight_bytes() const override { return packed_.nbytes() + (has_bias_ ? bias_.nbytes() : 0); }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const float* a = in[0].as<float>();
    float* y = out[0].as<float>();
    const int64_t mpanels = ceil_div(rows_, mr_);
    if (apack_floats_) {
      // Row panel mp holds rows [MR mp, MR mp + mr) as K x mr (workspace slot 0).
      float* ap = ops::workspace(0, apack_floats_);
      pool.parallel_for(mpanels, [&](int64_t mp, int) {
        const int64_t m0 = mp * mr_, mr = std::min(mr_, rows_ - m0);
        float* dst = ap + m0 * K_;
        for (int64_t k = 0; k < K_; ++k)
          for (int64_t r = 0; r < mr; ++r) dst[k * mr + r] = trans_a_ ? a[k * rows_ + m0 + r] : a[(m0 + r) * K_ + k];
      });
      a = ap;
    }
    const int64_t nblocks = ceil_div(npanels_, kPanelsPerTask);
    const float* packed = packed_.data();
    pool.parallel_for(nblocks * mpanels, [&](int64_t t, int) {
      const int64_t mp = t % mpanels, nb = t / mpanels;
      const int64_t m0 = mp * mr_, mr = std::min(mr_, rows_ - m0);
      F32GemmEpilogue e;
      e.min = act_min_;
      e.max = act_max_;
      for (int64_t p = nb * kPanelsPerTask; p < std::min(npanels_, (nb + 1) * kPanelsPerTask); ++p) {
        const int64_t n0 = p * nr_, nr = panel_nr(p);
        e.col_bias = has_bias_ ? bias_.data<float>() + n0 : nullptr;
        const F32GemmUkernel uk = (nr == nr_ ? ks_.main : ks_.tail)[mr];
        uk(static_cast<size_t>(std::min(nr_, N_ - n0)), static_cast<size_t>(K_), a + m0 * K_, packed + p * K_ * nr_,
           y + m0 * N_ + n0, static_cast<size_t>(N_), e);
      }
    });
  }

 private:
  int64_t panel_nr(int64_t p) const { return N_ - p * nr_ <= ks_.nr_tail ? ks_.nr_tail : nr_; }

  int64_t rows_, K_, N_;
  bool trans_a_;
  float act_min_, act_max_;
  F32GemmKernels ks_;
  int64_t mr_, nr_;  // the tile: activation rows x output features
  int64_t npanels_ = 0;
  bool has_bias_ = false;
  PackedWeights packed_;
  Tensor bias_;
  int64_t apack_floats_ = 0;  // the packed activation rows (0: read in place)
};

// (Not shape_str: inlined here it trips GCC 12's -Wrestrict false positive under -O3.)
std::string shape_reason(const char* what, const Shape& s, const char* need) {
  std::string r = what;
  r += " shape ";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += 'x';
    r += std::to_string(s[i]);
  }
  if (s.empty()) r += "scalar";
  r += " unsupported, needs ";
  r += need;
  return r;
}

}  // namespace

std::string check_gemm_f32(const NodeContext& ctx) {
  for (auto r : {ops::need_f32(ctx, 0, "A"), ops::need_f32(ctx, 1, "B"), ops::need_f32(ctx, 2, "C"),
                 ops::need_constant(ctx, 1, "weights (B)"), ops::need_constant(ctx, 2, "bias (C)")})
    if (!r.empty()) return r;
  if (ctx.in(0).shape.size() != 2) return shape_reason("A", ctx.in(0).shape, "2-D");
  if (ctx.in(1).shape.size() != 2) return shape_reason("B", ctx.in(1).shape, "2-D");
  if (ctx.has_input(2)) {
    const Shape& c = ctx.in(2).shape;
    const int64_t N = ctx.out(0).shape.at(1);
    const bool ok = num_elements(c) == 1 || (c.size() == 1 && c[0] == N) || (c.size() == 2 && c[0] == 1 && c[1] == N);
    if (!ok) return shape_reason("C", c, "a scalar, N or 1xN bias");
  }
  return "";
}

std::unique_ptr<Kernel> create_gemm_f32(const NodeContext& ctx, const F32GemmKernels& ks) {
  const Attributes& at = ctx.node.attrs;
  const bool ta = at.get_int("transA", 0) != 0, tb = at.get_int("transB", 0) != 0;
  const Shape& as = ctx.in(0).shape;
  const Shape& bs = ctx.in(1).shape;
  const int64_t rows = ta ? as[1] : as[0], K = ta ? as[0] : as[1], N = tb ? bs[0] : bs[1];
  const Tensor* c = ctx.constant(2);
  const int64_t bias_step = c && c->numel() > 1 ? 1 : 0;
  return std::make_unique<FullyConnectedF32>(rows, K, N, ta, ctx.constant(1)->data<float>(), tb ? 1 : N, tb ? K : 1,
                                             at.get_float("alpha", 1.0f), c ? c->data<float>() : nullptr, bias_step,
                                             at.get_float("beta", 1.0f),
                                             at.get_float("act_min", -std::numeric_limits<float>::infinity()),
                                             at.get_float("act_max", std::numeric_limits<float>::infinity()), ks);
}

std::string check_matmul_f32(const NodeContext& ctx) {
  for (auto r : {ops::need_f32(ctx, 0, "A"), ops::need_f32(ctx, 1, "B"), ops::need_constant(ctx, 1, "weights (B)")})
    if (!r.empty()) return r;
  if (ctx.in(1).shape.size() != 2) return shape_reason("B", ctx.in(1).shape, "2-D constant weights");
  if (ctx.in(0).shape.empty()) return "A is a scalar";
  return "";
}

std::unique_ptr<Kernel> create_matmul_f32(const NodeContext& ctx, const F32GemmKernels& ks) {
  const Shape& as = ctx.in(0).shape;
  const Shape& bs = ctx.in(1).shape;
  const int64_t K = bs[0], N = bs[1], rows = num_elements(as) / K;
  const float inf = std::numeric_limits<float>::infinity();
  return std::make_unique<FullyConnectedF32>(rows, K, N, false, ctx.constant(1)->data<float>(), N, 1, 1.0f, nullptr, 0,
                                             1.0f, -inf, inf, ks);
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_gemm_f32_avx2(const NodeContext& ctx) {
  return create_gemm_f32(ctx, f32_gemm_kernels_avx2());
}
std::unique_ptr<Kernel> create_matmul_f32_avx2(const NodeContext& ctx) {
  return create_matmul_f32(ctx, f32_gemm_kernels_avx2());
}
std::unique_ptr<Kernel> create_gemm_f32_avx512(const NodeContext& ctx) {
  return create_gemm_f32(ctx, f32_gemm_kernels_avx512());
}
std::unique_ptr<Kernel> create_matmul_f32_avx512(const NodeContext& ctx) {
  return create_matmul_f32(ctx, f32_gemm_kernels_avx512());
}
#endif

#if defined(__aarch64__)
std::unique_ptr<Kernel> create_gemm_f32_neon(const NodeContext& ctx) {
  return create_gemm_f32(ctx, f32_gemm_kernels_neon());
}
std::unique_ptr<Kernel> create_matmul_f32_neon(const NodeContext& ctx) {
  return create_matmul_f32(ctx, f32_gemm_kernels_neon());
}
#endif

}  // namespace lowbit
