// fp32 Conv drivers.
//
// Implicit GEMM in the NCHW-friendly orientation: rows = output channels (weights, pre-packed
// once into K x MR panels), columns = output pixels (im2col-packed per block of 16 pixels into
// K x 16 panels), so a tile row is 16 consecutive pixels of one output channel and stores
// straight into NCHW. The input is copied once per inference into a zero-padded buffer when the
// conv pads, which makes every im2col element addressable without bounds checks.
//
// Blocking: K is split into blocks of at most kKcMax rows so that one B panel (kc x 16) stays in
// L1 while a block of weight panels (kABlockBytes) stays in L2; a pixel block's packed B is sized
// for L2 (kBBlockBytes). Weights are stored in consumption order (group, K block, channel panel),
// so each pass streams them sequentially from memory. Tasks are (group, pixel block, channel
// range); small images, with few pixel blocks, split the channels across threads and pack the
// whole image's B once up front instead of once per task. Partial sums over K blocks live in the
// output itself; residual and bias enter with the first block (so a residual aliasing the output
// is fine), the clamp with the last. The K split is fixed at creation and every output element
// is computed by one task in one order, so results do not depend on the thread count.
#include "lowbit/operators/conv2d_f32.h"

#include <algorithm>
#include <cstring>

#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/f32-dwconv/f32_dwconv.h"
#include "lowbit/operators/operator_util.h"

namespace lowbit {
namespace {

using ops::ceil_div;

constexpr int64_t kMR = F32GemmKernels::kMaxMR;
constexpr int64_t kNR = 16;
constexpr int64_t kKcMax = 384;               // K rows per block: kc x 16 floats of B in L1
constexpr int64_t kBBlockBytes = 192 * 1024;  // packed B of one pixel block, in L2
constexpr int64_t kABlockBytes = 192 * 1024;  // weight rows of one K block reused across a pixel block, in L2
constexpr int64_t kSharedBBytes = 16 << 20;   // cap on the whole-image packed B (small images only)

class Conv2dIgemmF32 final : public Kernel {
 public:
  Conv2dIgemmF32(const Conv2dParams& p, const float* w, const float* bias, const F32GemmKernels& ks, int threads)
      : p_(p), ks_(ks) {
    Cg_ = p.C_per_group();
    Mg_ = p.M_per_group();
    K_ = Cg_ * p.KH * p.KW;
    OHW_ = p.OH * p.OW;
    pad_ = p.pad_top || p.pad_left || p.pad_bottom || p.pad_right;
    PH_ = p.H + p.pad_top + p.pad_bottom;
    PW_ = p.W + p.pad_left + p.pad_right;

    koff_.resize(static_cast<size_t>(K_));
    for (int64_t c = 0, k = 0; c < Cg_; ++c)
      for (int64_t kh = 0; kh < p.KH; ++kh)
        for (int64_t kw = 0; kw < p.KW; ++kw)
          koff_[static_cast<size_t>(k++)] = c * PH_ * PW_ + kh * p.DH * PW_ + kw * p.DW;

    nkb_ = ceil_div(K_, kKcMax);
    kc_ = ceil_div(K_, nkb_);
    // Weights in the order the tiles consume them, so each task streams them sequentially: per
    // group and K block, panels of kMR output channels (the last one narrower), each kc x mr.
    packed_ = Tensor(DType::f32, {p.M * K_});
    float* pw = packed_.data<float>();
    for (int64_t g = 0; g < p.group; ++g)
      for (int64_t k0 = 0; k0 < K_; k0 += kc_) {
        const int64_t kc = std::min(kc_, K_ - k0);
        for (int64_t m0 = 0; m0 < Mg_; m0 += kMR) {
          const int64_t mr = std::min(kMR, Mg_ - m0);
          float* dst = pw + weight_offset(g, k0, m0, kc);
          for (int64_t k = 0; k < kc; ++k)
            for (int64_t r = 0; r < mr; ++r) dst[k * mr + r] = w[(g * Mg_ + m0 + r) * K_ + k0 + k];
        }
      }
    if (bias) {
      bias_ = Tensor(DType::f32, {p.M});
      std::memcpy(bias_.data<float>(), bias, static_cast<size_t>(p.M) * sizeof(float));
    }

    // Pixel panels and their im2col runs (consecutive pixels whose sources are SW apart).
    for (int64_t p0 = 0; p0 < OHW_; p0 += kNR) {
      Panel pan;
      pan.p0 = p0;
      pan.nvalid = static_cast<int32_t>(std::min(kNR, OHW_ - p0));
      pan.nr = pan.nvalid <= 8 ? 8 : 16;
      pan.run_begin = static_cast<int32_t>(runs_.size());
      for (int64_t q = p0; q < p0 + pan.nvalid; ++q) {
        const int64_t src = (q / p.OW) * p.SH * PW_ + (q % p.OW) * p.SW;
        if (static_cast<int32_t>(runs_.size()) > pan.run_begin) {
          F32Im2colRun& last = runs_.back();
          if (last.src + last.len * p.SW == src) {
            ++last.len;
            continue;
          }
        }
        runs_.push_back({src, static_cast<int32_t>(q - p0), 1});
      }
      pan.run_end = static_cast<int32_t>(runs_.size());
      panels_.push_back(pan);
    }

    const int64_t npanels = static_cast<int64_t>(panels_.size());
    ppb_ = std::clamp<int64_t>(kBBlockBytes / (kc_ * kNR * 4), 1, npanels);
    npb_ = ceil_div(npanels, ppb_);
    mpanels_ = ceil_div(Mg_, kMR);
    mcp_ = std::max<int64_t>(1, kABlockBytes / (kc_ * kMR * 4));
    // Few pixel blocks (small images): threads split the output channels instead, so pack the
    // whole image's B once up front rather than once per task.
    shared_floats_ = p.group * nkb_ * npanels * kc_ * kNR;
    shared_ = p.group * npb_ < 8 && shared_floats_ * 4 <= kSharedBBytes;
    fetch_workspace(std::max(threads, 1));  // warm it now, not in the first inference
  }

  int64_t packed_weight_bytes() const override { return packed_.nbytes() + (bias_.empty() ? 0 : bias_.nbytes()); }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) override {
    const int threads = pool.size();
    fetch_workspace(threads);
    float* padded = padded_;
    float* shared_b = shared_b_;
    const float* x = in[0].as<float>();
    const float* res = in.size() > 3 && in[3].data ? in[3].as<float>() : nullptr;
    float* y = out[0].as<float>();
    // Enough tasks for the pool: split the output channels too when pixel blocks are few.
    const int64_t outer = p_.group * npb_;
    const int64_t msplit = threads == 1 || outer >= 4 * threads ? 1 : std::min(mpanels_, ceil_div(4 * threads, outer));
    const int64_t npanels = static_cast<int64_t>(panels_.size());
    for (int64_t n = 0; n < p_.N; ++n) {
      const float* xn = x + n * p_.C * p_.H * p_.W;
      if (pad_) {
        pool.parallel_for(p_.C, [&](int64_t c, int) {
          ops::copy_padded_plane(xn + c * p_.H * p_.W, p_.H, p_.W, p_.pad_top, p_.pad_left, PW_, PH_ * PW_, 0.0f,
                                 padded + c * PH_ * PW_);
        });
        xn = padded;
      }
      if (shared_) {
        pool.parallel_for(p_.group * nkb_ * npanels, [&](int64_t t, int) {
          const int64_t i = t % npanels, kb = (t / npanels) % nkb_, g = t / (npanels * nkb_);
          pack_panel(g, kb, i, xn, shared_b + t * kc_ * kNR);
        });
      }
      const float* rn = res ? res + n * p_.M * OHW_ : nullptr;
      float* yn = y + n * p_.M * OHW_;
      pool.parallel_for(outer * msplit, [&](int64_t t, int thread) {
        const int64_t ms = t % msplit, pb = (t / msplit) % npb_, g = t / (msplit * npb_);
        tile_block(g, pb, mpanels_ * ms / msplit, mpanels_ * (ms + 1) / msplit, xn, rn, yn, shared_b,
                   shared_ ? nullptr : bblocks_[thread]);
      });
    }
  }

 private:
  struct Panel {
    int64_t p0;
    int32_t nr, nvalid, run_begin, run_end;
  };

  // Workspace slots: 0 the padded input, 1 the image's packed B (shared mode), 2 + t thread t's B
  // block (otherwise).
  void fetch_workspace(int threads) {
    padded_ = pad_ ? ops::workspace(0, p_.C * PH_ * PW_) : nullptr;
    shared_b_ = shared_ ? ops::workspace(1, shared_floats_) : nullptr;
    if (!shared_) bblocks_.fetch(threads, ppb_ * kc_ * kNR);
  }

  // Start of the kc x mr weight panel for channels [m0, m0 + mr) of group g, K block at k0.
  int64_t weight_offset(int64_t g, int64_t k0, int64_t m0, int64_t kc) const {
    return g * Mg_ * K_ + k0 * Mg_ + m0 * kc;
  }

  // Rows [kb * kc, +kc) of pixel panel i of group g, packed kc x nr.
  void pack_panel(int64_t g, int64_t kb, int64_t i, const float* x, float* b) const {
    const Panel& pan = panels_[static_cast<size_t>(i)];
    const int64_t k0 = kb * kc_;
    ks_.im2col(static_cast<size_t>(std::min(kc_, K_ - k0)), x + g * Cg_ * PH_ * PW_, koff_.data() + k0,
               runs_.data() + pan.run_begin, static_cast<size_t>(pan.run_end - pan.run_begin),
               static_cast<size_t>(p_.SW), static_cast<size_t>(pan.nr), b);
  }

  // Output channel panels [mp0, mp1) x pixel block pb of group g. B comes packed in shared_b
  // (shared mode) or is packed here into this thread's bbuf.
  void tile_block(int64_t g, int64_t pb, int64_t mp0, int64_t mp1, const float* x, const float* res, float* y,
                  const float* shared_b, float* bbuf) const {
    const int64_t npanels = static_cast<int64_t>(panels_.size());
    const int64_t pan0 = pb * ppb_, pan1 = std::min(npanels, pan0 + ppb_);
    const float* packed = packed_.data<float>();
    const float* bias = bias_.empty() ? nullptr : bias_.data<float>();
    for (int64_t kb = 0; kb < nkb_; ++kb) {
      const int64_t k0 = kb * kc_, kc = std::min(kc_, K_ - k0);
      const float* bblk;
      if (!shared_b) {
        for (int64_t i = pan0; i < pan1; ++i) pack_panel(g, kb, i, x, bbuf + (i - pan0) * kc_ * kNR);
        bblk = bbuf - pan0 * kc_ * kNR;
      } else {
        bblk = shared_b + (g * nkb_ + kb) * npanels * kc_ * kNR;
      }
      F32GemmEpilogue e;
      const bool first = kb == 0, last = kb == nkb_ - 1;
      if (last) e.min = p_.act_min, e.max = p_.act_max;
      e.ld_init = static_cast<size_t>(OHW_);
      auto tile = [&](int64_t mp, int64_t i) {
        const Panel& pan = panels_[static_cast<size_t>(i)];
        const int64_t m = g * Mg_ + mp * kMR, mr = std::min(kMR, Mg_ - mp * kMR);
        float* c = y + m * OHW_ + pan.p0;
        if (first) {
          e.init = res ? res + m * OHW_ + pan.p0 : nullptr;
          e.row_bias = bias ? bias + m : nullptr;
        } else {
          e.init = c;
          e.row_bias = nullptr;
        }
        (pan.nr == 16 ? ks_.nr16 : ks_.nr8)[mr](static_cast<size_t>(pan.nvalid), static_cast<size_t>(kc),
                                                packed + weight_offset(g, k0, mp * kMR, kc), bblk + i * kc_ * kNR, c,
                                                static_cast<size_t>(OHW_), e);
      };
      // Weight panels in blocks of mcp_ (that block stays in L2) against each B panel (in L1).
      for (int64_t mb = mp0; mb < mp1; mb += mcp_)
        for (int64_t i = pan0; i < pan1; ++i)
          for (int64_t mp = mb; mp < std::min(mp1, mb + mcp_); ++mp) tile(mp, i);
    }
  }

  Conv2dParams p_;
  F32GemmKernels ks_;
  int64_t Cg_ = 0, Mg_ = 0, K_ = 0, OHW_ = 0, PH_ = 0, PW_ = 0;
  bool pad_ = false;
  std::vector<int64_t> koff_;
  std::vector<Panel> panels_;
  std::vector<F32Im2colRun> runs_;
  int64_t kc_ = 0, nkb_ = 0, ppb_ = 0, npb_ = 0, mpanels_ = 0, mcp_ = 0;
  bool shared_ = false;
  int64_t shared_floats_ = 0;
  Tensor packed_, bias_;
  float* padded_ = nullptr;
  float* shared_b_ = nullptr;
  ops::PerThreadWorkspace bblocks_;
};

// ---- depthwise ----

class DwConv2dF32 final : public Kernel {
 public:
  DwConv2dF32(const Conv2dParams& p, const float* w, const float* bias, int threads) : p_(p) {
    const int64_t taps = p.KH * p.KW;
    weights_ = Tensor(DType::f32, {p.C * taps});
    std::memcpy(weights_.data<float>(), w, static_cast<size_t>(p.C * taps) * sizeof(float));
    bias_ = Tensor(DType::f32, {p.C});
    if (bias) std::memcpy(bias_.data<float>(), bias, static_cast<size_t>(p.C) * sizeof(float));
    PH_ = p.H + p.pad_top + p.pad_bottom;
    PW_ = p.W + p.pad_left + p.pad_right;
    plane_floats_ = PH_ * PW_ + 16 * p.SW + 16;  // slack for vector tails
    geom_ = {static_cast<size_t>(p.KH), static_cast<size_t>(p.KW), static_cast<size_t>(p.SH),
             static_cast<size_t>(p.SW), static_cast<size_t>(p.DH), static_cast<size_t>(p.DW),
             static_cast<size_t>(p.OH), static_cast<size_t>(p.OW)};
    planes_.fetch(std::max(threads, 1), plane_floats_);
  }

  int64_t packed_weight_bytes() const override { return weights_.nbytes() + bias_.nbytes(); }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) override {
    planes_.fetch(pool.size(), plane_floats_);
    const float* x = in[0].as<float>();
    const float* res = in.size() > 3 && in[3].data ? in[3].as<float>() : nullptr;
    float* y = out[0].as<float>();
    const int64_t OHW = p_.OH * p_.OW, taps = p_.KH * p_.KW;
    pool.parallel_for(p_.N * p_.C, [&](int64_t nc, int thread) {
      const int64_t c = nc % p_.C;
      float* plane = planes_[thread];
      ops::copy_padded_plane(x + nc * p_.H * p_.W, p_.H, p_.W, p_.pad_top, p_.pad_left, PW_, plane_floats_, 0.0f,
                             plane);
      f32_dwconv2d_chw__avx2(plane, static_cast<size_t>(PW_), geom_, weights_.data<float>() + c * taps,
                             bias_.data<float>()[c], res ? res + nc * OHW : nullptr, y + nc * OHW, p_.act_min,
                             p_.act_max);
    });
  }

 private:
  Conv2dParams p_;
  Tensor weights_, bias_;
  int64_t PH_ = 0, PW_ = 0, plane_floats_ = 0;
  F32DwconvGeometry geom_{};
  ops::PerThreadWorkspace planes_;
};

std::string check_conv_common(const NodeContext& ctx) {
  for (auto r : {ops::need_f32(ctx, 0, "input"), ops::need_f32(ctx, 1, "weights"), ops::need_f32(ctx, 2, "bias"),
                 ops::need_f32(ctx, 3, "residual"), ops::need_constant(ctx, 1, "weights"),
                 ops::need_constant(ctx, 2, "bias"), ops::need_rank4(ctx)})
    if (!r.empty()) return r;
  if (ctx.out(0).dtype != DType::f32)
    return std::string("output dtype ") + dtype_name(ctx.out(0).dtype) + ", needs f32";
  return "";
}

const float* bias_data(const NodeContext& ctx) {
  const Tensor* b = ctx.constant(2);
  return b ? b->data<float>() : nullptr;
}

}  // namespace

const F32GemmKernels& f32_gemm_kernels_avx2() {
  static const F32GemmKernels ks = [] {
    F32GemmKernels k;
    k.nr16[1] = f32_gemm_1x16__avx2;
    k.nr16[2] = f32_gemm_2x16__avx2;
    k.nr16[3] = f32_gemm_3x16__avx2;
    k.nr16[4] = f32_gemm_4x16__avx2;
    k.nr16[5] = f32_gemm_5x16__avx2;
    k.nr16[6] = f32_gemm_6x16__avx2;
    k.nr8[1] = f32_gemm_1x8__avx2;
    k.nr8[2] = f32_gemm_2x8__avx2;
    k.nr8[3] = f32_gemm_3x8__avx2;
    k.nr8[4] = f32_gemm_4x8__avx2;
    k.nr8[5] = f32_gemm_5x8__avx2;
    k.nr8[6] = f32_gemm_6x8__avx2;
    k.im2col = f32_im2col_pack__avx2;
    return k;
  }();
  return ks;
}

std::string check_conv2d_f32_igemm(const NodeContext& ctx) { return check_conv_common(ctx); }

std::unique_ptr<Kernel> create_conv2d_f32_igemm(const NodeContext& ctx, const F32GemmKernels& ks) {
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  return std::make_unique<Conv2dIgemmF32>(p, ctx.constant(1)->data<float>(), bias_data(ctx), ks, ctx.threads);
}

std::unique_ptr<Kernel> create_conv2d_f32_igemm_avx2(const NodeContext& ctx) {
  return create_conv2d_f32_igemm(ctx, f32_gemm_kernels_avx2());
}

std::string check_conv2d_f32_dwconv(const NodeContext& ctx) {
  if (std::string r = check_conv_common(ctx); !r.empty()) return r;
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  if (!p.is_depthwise())
    return "group " + std::to_string(p.group) + " is not depthwise (C=" + std::to_string(p.C) +
           ", M=" + std::to_string(p.M) + ")";
  return "";
}

std::unique_ptr<Kernel> create_conv2d_f32_dwconv_avx2(const NodeContext& ctx) {
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  return std::make_unique<DwConv2dF32>(p, ctx.constant(1)->data<float>(), bias_data(ctx), ctx.threads);
}

}  // namespace lowbit
