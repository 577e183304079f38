// Winograd F(2x2, 3x3) driver for fp32 3x3 stride-1 convs (NCHW; design and numerics:
// kernels/f32-winograd/README.md).
//
// The output is cut into T = ceil(OH/2) x ceil(OW/2) tiles of 2x2. Per inference:
//   1. input transform, per channel (parallel): the channel's plane is copied zero-padded into
//      thread scratch, and each tile's 4x4 patch becomes 16 values V[xi][c][t], stored as B panels
//      of the GEMM micro-kernels (per xi and panel of nr tiles: C rows of nr tiles);
//   2. per (channel panel, tile panel): 16 GEMMs U[xi] (mr x C) x V[xi] (C x nr) into thread
//      scratch, then the output transform adds bias and residual, clamps, and writes NCHW.
// Where U stays in L2 and V does not, the two phases are fused per chunk of tile panels: a thread
// transforms a chunk (every channel) into its own scratch and runs step 2 on it at once, so V
// never leaves that core's L2 (fused_chunk_panels).
// U = G g G^T is packed once at creation as A panels, per channel panel all 16 xi contiguous.
// Every output element is computed by one task in a fixed order (K blocks included), so results
// do not depend on the thread count. Tiles, panels and the task grid: winograd_plan.h (shared with
// the int8 driver).
#include "lowbit/operators/conv2d_winograd_f32.h"

#include <algorithm>
#include <cstring>

#include "lowbit/ir/op_params.h"
#include "lowbit/operators/operator_util.h"
#include "lowbit/operators/elementwise_f32.h"
#include "lowbit/operators/winograd_plan.h"

namespace lowbit {
namespace {

using ops::ceil_div;

using winograd::kGroup;
using winograd::kXi;
using winograd::Panel;

class Conv2dWinogradF32 final : public Kernel {
 public:
  Conv2dWinogradF32(const Conv2dParams& p, const float* w, const float* bias, const F32WinogradKernels& ks, int threads,
                    const Target& target)
      : p_(p), ks_(ks), gk_(*ks.gemm), plan_(p, gk_.nr, gk_.nr_tail, gk_.mr), post_(p, target) {
    const int64_t mr_max = gk_.mr, nr = gk_.nr;
    nkb_ = ceil_div(p.C, static_cast<int64_t>(gk_.kc_max));
    kc_ = ceil_div(p.C, nkb_);

    // U: per channel panel (rows m0..m0+mr), per xi, per K block: kc x mr, a[k * mr + r].
    u_ = PackedWeights(kXi * p.M * p.C);
    std::vector<float> uk(static_cast<size_t>(kXi));
    float* u = u_.data();
    for (int64_t m = 0; m < p.M; ++m) {
      const int64_t mp = plan_.panel_of(m), m0 = plan_.panel_m0(mp), mr = plan_.panel_m0(mp + 1) - m0;
      for (int64_t c = 0; c < p.C; ++c) {
        f32_winograd_weights_2x2_3x3(w + (m * p.C + c) * 9, uk.data());
        for (int64_t xi = 0; xi < kXi; ++xi) u[m0 * kXi * p.C + (xi * p.C + c) * mr + (m - m0)] = uk[static_cast<size_t>(xi)];
      }
    }
    if (bias) bias_.assign(bias, bias + p.M);
    else bias_.assign(static_cast<size_t>(p.M), 0.0f);
    u_in_l2_ = winograd::u_fits_l2(kXi * p.M * p.C * 4, target.caches);
    chunk_panels_ = fused_chunk_panels(target.caches);
    // Input transform scratch: the padded plane (plus the over-read of the even/odd split) and the
    // split rows; the GEMM phase reuses it for the 16 result tiles. Fused, the thread's V chunk
    // comes first.
    half_ = ceil_div(plan_.TW + 1 + 32, 16) * 16;
    plane_floats_ = ceil_div(plan_.PH * plan_.PW + 2 * half_ + 16, 16) * 16;
    vchunk_floats_ = chunk_panels_ * kXi * p.C * nr;
    scratch_floats_ = vchunk_floats_ + std::max(kGroup * kXi * mr_max * nr, plane_floats_ + 2 * plan_.PH * half_) + 16;
    if (!chunk_panels_) ops::workspace(0, kXi * p_.C * plan_.tpad);  // warm it now, not in the first inference
    ops::per_thread_workspace(threads, scratch_floats_);
  }

  // Panels per chunk of the fused walk, 0 for the two-phase one. Two-phase, the input transform
  // writes all of V (16 x C x tiles floats: 3.2 MB for ResNet's 64-channel 56 x 56 convs, 6.4 MB
  // for DenseNet's 128 -> 32 ones) before the GEMMs read it back, so V makes a round trip through
  // L3 or memory. Where U stays in L2 the GEMMs walk the tile panels outermost anyway, so each
  // thread can transform a chunk of panels into its own scratch and consume it at once. The chunk
  // takes a quarter of L2 (one 32-tile panel at 128 channels on a 1 MB L2), next to U's half.
  // Where all of V fits in that quarter (small maps) nothing is saved and the two-phase walk,
  // which splits the channel panels too, balances better. Measured on the 2-vCPU Zen 5 (1 MB L2),
  // two-phase -> fused, alternating medians: ResNet's 64-channel 56 x 56 conv 0.88 -> 0.85 ms on 1
  // thread and 0.67 -> 0.53 on 2; four in a row on 2 threads 2.78 -> 2.04 ms; DenseNet's 128 -> 32
  // at 56 x 56 1.12 -> 1.18 (the halo rows each one-panel chunk copies again) and 0.89 -> 0.78, at
  // 28 x 28 0.31 -> 0.32 and 0.29 -> 0.19. Two-phase, half of each 2-thread GEMM's V had crossed
  // cores or gone to L3 (the input transform took 1.6x its 1-thread CPU time, the output 1.7x).
  int64_t fused_chunk_panels(const CacheSizes& c) const {
    if (!u_in_l2_) return 0;
    const int64_t panel_bytes = kXi * p_.C * gk_.nr * 4, budget = c.l2 / 4;
    if (kXi * p_.C * plan_.tpad * 4 <= budget) return 0;
    return std::clamp<int64_t>(budget / panel_bytes, 1, static_cast<int64_t>(plan_.panels.size()));
  }

  int64_t packed_weight_bytes() const override { return u_.nbytes() + static_cast<int64_t>(bias_.size() * 4); }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    // Workspace slots: 0 V (two-phase: all xi, C rows, plan_.tpad tiles); 2 + t thread t's scratch.
    float* const v = chunk_panels_ ? nullptr : ops::workspace(0, kXi * p_.C * plan_.tpad);
    float* const* scratch = ops::per_thread_workspace(pool.size(), scratch_floats_);
    const float* x = in[0].as<float>();
    const float* res = in.size() > 3 && in[3].data ? in[3].as<float>() : nullptr;
    float* y = out[0].as<float>();
    const int64_t OHW = p_.OH * p_.OW;
    const int64_t np = static_cast<int64_t>(plan_.panels.size());
    for (int64_t n = 0; n < p_.N; ++n) {
      const float* xn = x + n * p_.C * p_.H * p_.W;
      const float* rn = res ? res + n * p_.M * OHW : nullptr;
      float* yn = y + n * p_.M * OHW;
      if (chunk_panels_) {
        // Fused: per chunk of tile panels (in image order, so a thread's share is a band of the
        // image), the input transform of every channel into the thread's V chunk, then every
        // channel panel's GEMMs and output transforms on it while it is in L2.
        // Chunks of at most chunk_panels_, as many per thread (SqueezeNet's 16 -> 64 at 55 x 55 has
        // 25 panels: chunks of 8 gave one thread 16 of them, the other 9; 4 chunks of 6-7 split 12 / 13).
        const int64_t nchunks = std::min(np, pool.size() * ceil_div(np, pool.size() * chunk_panels_));
        pool.parallel_for(nchunks, [&](int64_t t, int thread) {
          const int64_t pi0 = np * t / nchunks, pi1 = np * (t + 1) / nchunks;
          const Panel& last = plan_.panels[static_cast<size_t>(pi1 - 1)];
          const int64_t base0 = plan_.panels[static_cast<size_t>(pi0)].base;
          const VView vv{scratch[thread], p_.C * (last.base + last.width - base0), base0};
          float* rest = scratch[thread] + vchunk_floats_;
          for (int64_t c = 0; c < p_.C; ++c) transform_input(vv, c, xn + c * p_.H * p_.W, rest, pi0, pi1);
          for (int64_t pi = pi0; pi < pi1; ++pi)
            for (int64_t mp = 0; mp < plan_.mpanels; mp += kGroup)
              tile(vv, mp, std::min(plan_.mpanels, mp + kGroup), pi, rn, yn, rest, false);
        });
        continue;
      }
      // With several threads, band b of the tile panels (as many bands as threads, bands outermost)
      // is transformed by the thread whose GEMM share reads it (run_gemm_tasks: tile panels major,
      // split at the same panels), not channel by channel: V is 16 x C x tiles floats (1.8 MB for
      // ResNet's 128-channel 28 x 28 convs, whose 1 MB U keeps them two-phase on a 1 MB L2), and by
      // channels half of each thread's V came from the other core. Each band copies its plane again
      // (a few KB against V's 16 floats per tile).
      const VView vv{v, p_.C * plan_.tpad, 0};
      const int64_t nb = std::min<int64_t>(pool.size(), np);
      pool.parallel_for(nb * p_.C, [&](int64_t t, int thread) {
        const int64_t b = t / p_.C, c = t % p_.C;
        transform_input(vv, c, xn + c * p_.H * p_.W, scratch[thread], np * b / nb, np * (b + 1) / nb);
      });
      plan_.run_gemm_tasks(pool, u_in_l2_,
                           [&](int64_t mpa, int64_t mpb, int64_t pi, bool first_pass, int thread) {
                             tile(vv, mpa, mpb, pi, rn, yn, scratch[thread], first_pass);
                           });
    }
  }

 private:
  // Pulls slice `step` of 16 of channel panel mp's U into L2 (mp == mpanels: nothing).
  void prefetch_u(int64_t mp, int64_t step) const {
    if (mp >= plan_.mpanels) return;
    const float* a = u_.data() + plan_.panel_m0(mp) * kXi * p_.C;
    winograd::prefetch_slice(reinterpret_cast<const char*>(a), (plan_.panel_m0(mp + 1) - plan_.panel_m0(mp)) * kXi * p_.C * 4,
                             step, kXi);
  }

  // Where V lives: all of it (two-phase: xi stride C x tpad, from panel column 0) or a thread's
  // chunk (fused: xi stride C x the chunk's columns, from the chunk's first panel column).
  struct VView {
    float* v;
    int64_t ld_xi, base0;
  };
  // V element (xi, c, panel column j) of panel pan.
  float* v_at(const VView& vv, const Panel& pan, int64_t xi, int64_t c, int64_t j) const {
    return vv.v + xi * vv.ld_xi + (pan.base - vv.base0) * p_.C + c * pan.width + j;
  }

  // Tile panels [pi0, pi1) of channel c: only the padded rows their patches cover are copied and
  // split (a band's tile rows plus the 2-row halo), so a thread reads the input rows the previous
  // layer's share of the same band wrote and no other. Copying the whole plane per band, each of 2
  // threads read (and so shared) every line of the input, and the next write to those lines had
  // to take them back from the other core: a chain of 64-channel 55x55 convs ran 1.13x faster on 2
  // threads than on 1, its input transform taking 2.25x the CPU time and the output 3.2x.
  void transform_input(const VView& vv, int64_t c, const float* xc, float* plane, int64_t pi0, int64_t pi1) const {
    const Panel& first = plan_.panels[static_cast<size_t>(pi0)];
    const Panel& last = plan_.panels[static_cast<size_t>(pi1 - 1)];
    const int64_t r0 = plan_.segs[static_cast<size_t>(first.seg_begin)].oh;
    const int64_t r1 = std::min<int64_t>(plan_.PH, plan_.segs[static_cast<size_t>(last.seg_end - 1)].oh + 4);
    ops::copy_padded_rows(xc, 1, p_.H, p_.W, p_.pad_top, p_.pad_left, plan_.PH, plan_.PW, 0.0f, r0, r1, plane);
    float* eo = plane + plane_floats_;
    // The split reads 2 * half floats from the start of each row, past the band's last row into
    // scratch that may hold another band's rows: those land in columns past every tile's patch.
    ks_.split(plane + r0 * plan_.PW, static_cast<size_t>(plan_.PW), static_cast<size_t>(r1 - r0),
              static_cast<size_t>(half_), eo + 2 * r0 * half_);
    for (int64_t pi = pi0; pi < pi1; ++pi) {
      const Panel& pan = plan_.panels[static_cast<size_t>(pi)];
      ks_.input(eo, static_cast<size_t>(half_), plan_.segs.data() + pan.seg_begin,
                static_cast<size_t>(pan.seg_end - pan.seg_begin), static_cast<size_t>(pan.width), v_at(vv, pan, 0, c, 0),
                static_cast<size_t>(vv.ld_xi));
    }
  }

  // Channel panels [mpa, mpb) x tile panel pi: per xi and K block, the GEMM of each channel panel
  // against the same B panel (in L1), into s[mp - mpa][xi][r][j]; then the output transforms.
  void tile(const VView& vv, int64_t mpa, int64_t mpb, int64_t pi, const float* res, float* y, float* s, bool first_pass) const {
    const Panel& pan = plan_.panels[static_cast<size_t>(pi)];
    const int64_t w = pan.width, slot = kXi * gk_.mr * w;
    const F32GemmUkernel* uks = w == gk_.nr ? gk_.main : gk_.tail;
    // Per channel panel its 16 xi in a row: U is read as one sequential stream per panel (48-200 KB),
    // and on the group's first tile panel the next channel panel's U is pulled in meanwhile.
    for (int64_t mp = mpa; mp < mpb; ++mp) {
      const int64_t m0 = plan_.panel_m0(mp), mr = plan_.panel_m0(mp + 1) - m0;
      for (int64_t xi = 0; xi < kXi; ++xi) {
        if (first_pass) prefetch_u(mp + 1, xi);
        float* c = s + (mp - mpa) * slot + xi * mr * w;
        for (int64_t kb = 0; kb < nkb_; ++kb) {
          const int64_t k0 = kb * kc_, kc = std::min(kc_, p_.C - k0);
          F32GemmEpilogue e;
          e.init = kb == 0 ? nullptr : c;
          e.ld_init = static_cast<size_t>(w);
          uks[mr](static_cast<size_t>(pan.nvalid), static_cast<size_t>(kc),
                  u_.data() + m0 * kXi * p_.C + (xi * p_.C + k0) * mr, v_at(vv, pan, xi, k0, 0), c, static_cast<size_t>(w),
                  e);
        }
      }
    }
    const int64_t OHW = p_.OH * p_.OW;
    for (int64_t mp = mpa; mp < mpb; ++mp) {
      const int64_t m0 = plan_.panel_m0(mp), mr = plan_.panel_m0(mp + 1) - m0;
      for (int64_t r = 0; r < mr; ++r) {
        const int64_t m = m0 + r;
        ks_.output(s + (mp - mpa) * slot + r * w, static_cast<size_t>(mr * w), static_cast<size_t>(w),
                   plan_.segs.data() + pan.seg_begin, static_cast<size_t>(pan.seg_end - pan.seg_begin),
                   bias_[static_cast<size_t>(m)], res ? res + m * OHW : nullptr, y + m * OHW,
                   static_cast<size_t>(p_.OH), static_cast<size_t>(p_.OW), p_.act_min, p_.act_max);
        if (post_)  // the rows of the 2x2 tiles just written
          for (int32_t si = pan.seg_begin; si < pan.seg_end; ++si) {
            const F32WinogradSegment& g = plan_.segs[static_cast<size_t>(si)];
            const int64_t cols = std::min<int64_t>(2 * g.n, p_.OW - g.ow);
            for (int64_t oh = g.oh; oh < std::min<int64_t>(g.oh + 2, p_.OH); ++oh)
              post_(y + m * OHW + oh * p_.OW + g.ow, cols);
          }
      }
    }
  }

  Conv2dParams p_;
  F32WinogradKernels ks_;
  const F32GemmKernels& gk_;
  winograd::Plan plan_;
  int64_t nkb_ = 0, kc_ = 0, half_ = 0, plane_floats_ = 0, scratch_floats_ = 0;
  int64_t chunk_panels_ = 0, vchunk_floats_ = 0;  // the fused walk's panels per chunk (0: two-phase), its V
  bool u_in_l2_ = false;  // U stays in L2 across a task's tile panels: tile panels walk outermost
  ConvPostOp post_;
  PackedWeights u_;
  std::vector<float> bias_;
};

}  // namespace

std::string check_conv2d_f32_winograd(const NodeContext& ctx) {
  // The same dtypes, constant weights and rank as the implicit GEMM, then the geometry.
  if (std::string r = check_conv2d_f32_igemm(ctx); !r.empty()) return r;
  return winograd::applies(conv2d_params(ctx.graph, ctx.node));
}

std::unique_ptr<Kernel> create_conv2d_f32_winograd(const NodeContext& ctx, const F32WinogradKernels& ks) {
  const Tensor* b = ctx.constant(2);
  return std::make_unique<Conv2dWinogradF32>(conv2d_params(ctx.graph, ctx.node), ctx.constant(1)->data<float>(),
                                             b ? b->data<float>() : nullptr, ks, ctx.threads, ctx.target);
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_conv2d_f32_winograd_avx2(const NodeContext& ctx) {
  static const F32WinogradKernels ks{&f32_gemm_kernels_avx2(), f32_winograd_split__avx2,
                                     f32_winograd_input_2x2_3x3__avx2,
                                     f32_winograd_output_2x2_3x3__avx2};
  return create_conv2d_f32_winograd(ctx, ks);
}
std::unique_ptr<Kernel> create_conv2d_f32_winograd_avx512(const NodeContext& ctx) {
  static const F32WinogradKernels ks{&f32_gemm_kernels_avx512(), f32_winograd_split__avx512,
                                     f32_winograd_input_2x2_3x3__avx512,
                                     f32_winograd_output_2x2_3x3__avx512};
  return create_conv2d_f32_winograd(ctx, ks);
}
#endif

#if defined(__aarch64__)
std::unique_ptr<Kernel> create_conv2d_f32_winograd_neon(const NodeContext& ctx) {
  static const F32WinogradKernels ks{&f32_gemm_kernels_neon(), f32_winograd_split__neon,
                                     f32_winograd_input_2x2_3x3__neon,
                                     f32_winograd_output_2x2_3x3__neon};
  return create_conv2d_f32_winograd(ctx, ks);
}
#endif

}  // namespace lowbit
