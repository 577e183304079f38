// fp32 Conv drivers.
//
// Implicit GEMM in the NCHW-friendly orientation: rows = output channels (weights, pre-packed
// once into K x MR panels), columns = output pixels (im2col-packed per block of NR pixels into
// K x NR panels), so a tile row is NR consecutive pixels of one output channel and stores
// straight into NCHW. MR, NR, the narrower last panel and the K block come with the ISA's
// micro-kernel set (F32GemmKernels): AVX2 6 x 16, AVX-512 12 x 32, NEON 6 x 16. The input is
// copied once per inference into a zero-padded buffer when the conv pads, which makes every
// im2col element addressable without bounds checks. Small images (7x7, 14x14) with AVX-512 use
// the opposite orientation, output channels on the lanes (Conv2dIgemmChannelsF32 below).
//
// Blocking: K is split into blocks of at most kc_max rows so that one weight panel (kc x MR) stays
// in L1 while it runs along a pixel block's packed B, which is sized for L2 (the walk order and
// why: tile_block).
// Both L2 blocks are 3/8 of the L2 of the machine creating the kernel (Target::caches): 192 KB on
// Zen 3's 512 KB, the sizes these blocks were tuned at as constants, 384 KB on Zen 4/5's 1 MB and
// 768 KB on a Xeon's 2 MB (on Zen 5, ResNet-50 ran the same with either size: 54.4 vs 55.4 ms).
// Weights are stored in consumption order (group, K block, channel panel), so each pass streams
// them sequentially from memory. Tasks are (group, pixel block, channel
// range); small images, with few pixel blocks, split the channels across threads and pack the
// whole image's B once up front instead of once per task. Partial sums over K blocks live in the
// output itself; residual and bias enter with the first block (so a residual aliasing the output
// is fine), the clamp with the last. The K split is fixed at creation and every output element
// is computed by one task in one order, so results do not depend on the thread count.
#include "lowbit/operators/conv2d_f32.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "lowbit/common/error.h"
#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/f32-dwconv/f32_dwconv.h"
#include "lowbit/operators/elementwise_f32.h"
#include "lowbit/operators/operator_util.h"

namespace lowbit {
namespace {

using ops::ceil_div;

constexpr int64_t kSharedBBytes = 16 << 20;  // cap on the whole-image packed B (small images only)

// The packed B of one pixel block, and the weight rows of one K block reused across it: each 3/8
// of L2, so both stay there with a quarter left for the output tiles and the next block's loads.
int64_t l2_block_bytes(const CacheSizes& c) { return c.l2 * 3 / 8; }

class Conv2dIgemmF32 final : public Kernel {
 public:
  Conv2dIgemmF32(const Conv2dParams& p, const float* w, const float* bias, const F32GemmKernels& ks, int threads,
                 const Target& target)
      : p_(p), ks_(ks), mr_(ks.mr), nr_(ks.nr), post_(p, target) {
    const CacheSizes& caches = target.caches;
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

    mpanels_ = ceil_div(Mg_, mr_);
    nkb_ = ceil_div(K_, ks.kc_max);
    kc_ = ceil_div(K_, nkb_);
    // Weights in the order the tiles consume them, so each task streams them sequentially: per
    // group and K block, panels of at most mr_ output channels, each kc x mr. Panel sizes are
    // balanced (64 = 6 x 10-11, not 5 x 12 + 4: a 4-row tile cannot hide the FMA latency).
    packed_ = PackedWeights(p.M * K_);
    float* pw = packed_.data();
    for (int64_t g = 0; g < p.group; ++g)
      for (int64_t k0 = 0; k0 < K_; k0 += kc_) {
        const int64_t kc = std::min(kc_, K_ - k0);
        for (int64_t mp = 0; mp < mpanels_; ++mp) {
          const int64_t m0 = panel_m0(mp), mr = panel_m0(mp + 1) - m0;
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
    for (int64_t p0 = 0; p0 < OHW_; p0 += nr_) {
      Panel pan;
      pan.p0 = p0;
      pan.nvalid = static_cast<int32_t>(std::min(nr_, OHW_ - p0));
      pan.nr = pan.nvalid <= ks.nr_tail ? ks.nr_tail : ks.nr;
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
    slot_ = kc_ * nr_;  // floats per packed panel
    ppb_ = std::clamp<int64_t>(l2_block_bytes(caches) / (slot_ * 4), 1, npanels);
    npb_ = ceil_div(npanels, ppb_);
    mcp_ = std::max<int64_t>(1, l2_block_bytes(caches) / (kc_ * mr_ * 4));
    // Few pixel blocks (small images): threads split the output channels instead, so pack the
    // whole image's B once up front rather than once per task.
    shared_floats_ = p.group * nkb_ * npanels * slot_;
    // A 1x1 stride-1 conv without padding reads B in place: row k of a pixel panel is input channel
    // k's pixels [p0, p0 + nr), so the kernel takes the input with its row stride and only a panel
    // narrower than nr (the image's last) is packed.
    direct_ = p.KH == 1 && p.KW == 1 && p.SH == 1 && p.SW == 1 && !pad_;
    shared_ = !direct_ && p.group * npb_ < 8 && shared_floats_ * 4 <= kSharedBBytes;
    fetch_workspace(std::max(threads, 1));  // warm it now, not in the first inference
  }

  int64_t packed_weight_bytes() const override { return packed_.nbytes() + (bias_.empty() ? 0 : bias_.nbytes()); }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const int threads = pool.size();
    const Scratch ws = fetch_workspace(threads);
    float* padded = ws.padded;
    float* shared_b = ws.shared_b;
    const float* x = in[0].as<float>();
    const float* res = in.size() > 3 && in[3].data ? in[3].as<float>() : nullptr;
    float* y = out[0].as<float>();
    const int64_t npanels = static_cast<int64_t>(panels_.size());
    const int64_t ppb = block_panels(threads), npb = ceil_div(npanels, ppb);
    // Enough tasks for the pool: split the output channels too when pixel blocks are few.
    const int64_t outer = p_.group * npb;
    // Packed up front (shared), B costs nothing more per split: split finer, for balance.
    const int64_t split_to = (shared_ ? 8 : 4) * threads;
    const int64_t msplit = threads == 1 || outer >= split_to ? 1 : std::min(mpanels_, ceil_div(split_to, outer));
    for (int64_t n = 0; n < p_.N; ++n) {
      const float* xn = x + n * p_.C * p_.H * p_.W;
      if (pad_) {
        const int64_t nb = ops::row_blocks(PH_, threads);
        pool.parallel_for(nb, [&](int64_t b, int) {
          ops::copy_padded_rows(xn, p_.C, p_.H, p_.W, p_.pad_top, p_.pad_left, PH_, PW_, 0.0f, PH_ * b / nb,
                                PH_ * (b + 1) / nb, padded);
        });
        xn = padded;
      }
      if (shared_) {
        pool.parallel_for(p_.group * nkb_ * npanels, [&](int64_t t, int) {
          const int64_t i = t % npanels, kb = (t / npanels) % nkb_, g = t / (npanels * nkb_);
          pack_panel(g, kb, i, xn, shared_b + t * slot_);
        });
      }
      const float* rn = res ? res + n * p_.M * OHW_ : nullptr;
      float* yn = y + n * p_.M * OHW_;
      pool.parallel_for(outer * msplit, [&](int64_t t, int thread) {
        const int64_t ms = t % msplit, pb = (t / msplit) % npb, g = t / (msplit * npb);
        tile_block(g, pb * ppb, std::min(npanels, (pb + 1) * ppb), mpanels_ * ms / msplit,
                   mpanels_ * (ms + 1) / msplit, xn, rn, yn, shared_b, shared_ ? nullptr : ws.bblocks[thread]);
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
  struct Scratch {
    float* padded = nullptr;
    float* shared_b = nullptr;
    float* const* bblocks = nullptr;
  };
  Scratch fetch_workspace(int threads) const {
    Scratch ws;
    ws.padded = pad_ ? ops::workspace(0, p_.C * PH_ * PW_) : nullptr;
    ws.shared_b = shared_ ? ops::workspace(1, shared_floats_) : nullptr;
    if (!shared_)
      ws.bblocks = ops::per_thread_workspace(threads, std::min<int64_t>(2 * ppb_, static_cast<int64_t>(panels_.size())) * slot_);
    return ws;
  }

  // Whether pixel panel i is read in place (direct_: a full-width panel of a 1x1 stride-1 conv).
  bool in_place(int64_t i) const { return direct_ && panels_[static_cast<size_t>(i)].nvalid == nr_; }

  // First output channel (within the group) of weight panel mp.
  int64_t panel_m0(int64_t mp) const { return Mg_ * mp / mpanels_; }

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

  // Pixel panels per block for a pool of `threads`: near the L2-sized default, such that the blocks
  // split evenly over the threads (17 blocks on 2 threads leave one idling for a block's time).
  // Blocks only group pixels, so results do not depend on it.
  int64_t block_panels(int threads) const {
    const int64_t npanels = static_cast<int64_t>(panels_.size());
    if (threads == 1) return ppb_;
    int64_t best = ppb_, best_cost = INT64_MAX;
    for (int64_t ppb = std::max<int64_t>(1, ppb_ / 2); ppb <= std::min(npanels, 2 * ppb_); ++ppb) {
      // Panels on the busiest thread (ties: the block size nearest the default).
      const int64_t cost = ceil_div(p_.group * ceil_div(npanels, ppb), threads) * ppb;
      if (cost < best_cost || (cost == best_cost && std::abs(ppb - ppb_) < std::abs(best - ppb_)))
        best = ppb, best_cost = cost;
    }
    return best;
  }

  // Output channel panels [mp0, mp1) x pixel panels [pan0, pan1) of group g. B comes packed in
  // shared_b (shared mode) or is packed here into this thread's bbuf.
  void tile_block(int64_t g, int64_t pan0, int64_t pan1, int64_t mp0, int64_t mp1, const float* x, const float* res,
                  float* y, const float* shared_b, float* bbuf) const {
    const int64_t npanels = static_cast<int64_t>(panels_.size());
    const float* packed = packed_.data();
    const float* bias = bias_.empty() ? nullptr : bias_.data<float>();
    for (int64_t kb = 0; kb < nkb_; ++kb) {
      const int64_t k0 = kb * kc_, kc = std::min(kc_, K_ - k0);
      const float* bblk;
      if (!shared_b) {
        for (int64_t i = pan0; i < pan1; ++i)
          if (!in_place(i)) pack_panel(g, kb, i, x, bbuf + (i - pan0) * slot_);
        bblk = bbuf - pan0 * slot_;
      } else {
        bblk = shared_b + (g * nkb_ + kb) * npanels * slot_;
      }
      F32GemmEpilogue e;
      const bool first = kb == 0, last = kb == nkb_ - 1;
      if (last) e.min = p_.act_min, e.max = p_.act_max;
      e.ld_init = static_cast<size_t>(OHW_);
      auto tile = [&](int64_t mp, int64_t i) {
        const Panel& pan = panels_[static_cast<size_t>(i)];
        const int64_t m = g * Mg_ + panel_m0(mp), mr = panel_m0(mp + 1) - panel_m0(mp);
        float* c = y + m * OHW_ + pan.p0;
        if (first) {
          e.init = res ? res + m * OHW_ + pan.p0 : nullptr;
          e.row_bias = bias ? bias + m : nullptr;
        } else {
          e.init = c;
          e.row_bias = nullptr;
        }
        const F32GemmUkernel uk = (pan.nr == nr_ ? ks_.main : ks_.tail)[mr];
        const bool direct = in_place(i);
        e.ldb = direct ? static_cast<size_t>(OHW_) : 0;
        uk(static_cast<size_t>(pan.nvalid), static_cast<size_t>(kc), packed + weight_offset(g, k0, panel_m0(mp), kc),
           direct ? x + (g * Cg_ + k0) * OHW_ + pan.p0 : bblk + i * slot_, c, static_cast<size_t>(OHW_), e);
      };
      // Weight panels in blocks of mcp_; each weight panel (in L1) runs along the block's pixel
      // panels (in L2), so a tile row's outputs are written as mr contiguous streams. The other
      // order (each B panel against every weight panel) wrote mr rows of 128 bytes per tile at the
      // plane's stride: one page per channel, more streams than the prefetchers follow, so on a
      // 56x56 map whose output overflows L2 every store missed. Intel Xeon (2 MB L2), 1 thread,
      // alternating: ResNet's 64->256 @56 1.39 -> 0.89 ms; ResNet-50 61 -> 57.6 ms (AVX2 rows:
      // 108 -> 104); MobileNetV2 7.2 -> 6.9; SqueezeNet 2 threads 3.87 -> 3.66.
      for (int64_t mb = mp0; mb < mp1; mb += mcp_) {
        const int64_t mb1 = std::min(mp1, mb + mcp_);
        for (int64_t mp = mb; mp < mb1; ++mp)
          for (int64_t i = pan0; i < pan1; ++i) tile(mp, i);
        if (last && post_) {
          // The block's output, still in L2, one call per channel row of the pixel block: per tile
          // row (32 floats a call) the calls cost more than the memory pass they save (EfficientNet-B0).
          const int64_t q0 = panels_[static_cast<size_t>(pan0)].p0;
          const int64_t q1 = panels_[static_cast<size_t>(pan1 - 1)].p0 + panels_[static_cast<size_t>(pan1 - 1)].nvalid;
          for (int64_t m = g * Mg_ + panel_m0(mb); m < g * Mg_ + panel_m0(mb1); ++m) post_(y + m * OHW_ + q0, q1 - q0);
        }
      }
    }
  }

  Conv2dParams p_;
  F32GemmKernels ks_;
  int64_t mr_, nr_;  // the tile: output channels x pixels
  ConvPostOp post_;
  int64_t Cg_ = 0, Mg_ = 0, K_ = 0, OHW_ = 0, PH_ = 0, PW_ = 0;
  bool pad_ = false;
  std::vector<int64_t> koff_;
  std::vector<Panel> panels_;
  std::vector<F32Im2colRun> runs_;
  int64_t kc_ = 0, slot_ = 0, nkb_ = 0, ppb_ = 0, npb_ = 0, mpanels_ = 0, mcp_ = 0;
  bool shared_ = false, direct_ = false;
  int64_t shared_floats_ = 0;
  PackedWeights packed_;
  Tensor bias_;
};

// ---- small images: output channels on the lanes ----
//
// With few output pixels (7x7 = 49 in ResNet's last stage) pixel panels waste lanes (49 of 64 with
// 32-wide panels). This orientation swaps the roles: rows = output pixels (the image im2col-packed
// once per inference into K x r panels, r <= MR, sizes balanced: 49 = 13 + 12 + 12 + 12), columns
// = output channels (weights packed once into K x NR panels), tiles accumulate into a transposed
// pixels x channels scratch, and each task writes its channels back to NCHW. Tasks are ranges of
// channel panels; the K split and each tile's order do not depend on the thread count.
class Conv2dIgemmChannelsF32 final : public Kernel {
 public:
  Conv2dIgemmChannelsF32(const Conv2dParams& p, const float* w, const float* bias, const F32GemmKernels& ks,
                         const Target& target)
      : p_(p), ks_(ks), scratch_l1_bytes_(target.caches.l1d * 3 / 4), post_(p, target) {
    K_ = p.C * p.KH * p.KW;
    OHW_ = p.OH * p.OW;
    pad_ = p.pad_top || p.pad_left || p.pad_bottom || p.pad_right;
    PH_ = p.H + p.pad_top + p.pad_bottom;
    PW_ = p.W + p.pad_left + p.pad_right;
    koff_.resize(static_cast<size_t>(K_));
    for (int64_t c = 0, k = 0; c < p.C; ++c)
      for (int64_t kh = 0; kh < p.KH; ++kh)
        for (int64_t kw = 0; kw < p.KW; ++kw)
          koff_[static_cast<size_t>(k++)] = c * PH_ * PW_ + kh * p.DH * PW_ + kw * p.DW;

    nkb_ = ceil_div(K_, ks.kc_max);
    kc_ = ceil_div(K_, nkb_);
    const int64_t nrows = ceil_div(OHW_, ks.mr);
    for (int64_t i = 0; i <= nrows; ++i) row0_.push_back(OHW_ * i / nrows);
    // Each row panel's pixels as im2col runs (pixels whose sources are SW apart), so the ISA's
    // packer copies them with vector loads: a row panel is a B panel of r columns.
    for (int64_t i = 0; i < nrows; ++i) {
      run0_.push_back(static_cast<int32_t>(runs_.size()));
      const int64_t q0 = row0_[static_cast<size_t>(i)];
      for (int64_t q = q0; q < row0_[static_cast<size_t>(i) + 1]; ++q) {
        const int64_t src = (q / p.OW) * p.SH * PW_ + (q % p.OW) * p.SW;
        if (static_cast<int32_t>(runs_.size()) > run0_.back() && runs_.back().src + runs_.back().len * p.SW == src)
          ++runs_.back().len;
        else
          runs_.push_back({src, static_cast<int32_t>(q - q0), 1});
      }
    }
    run0_.push_back(static_cast<int32_t>(runs_.size()));
    nr_ = ks.nr;
    ncp_ = ceil_div(p.M, nr_);
    // Weights in consumption order, per K block its channel panels: a task streams runs of them.
    packed_ = PackedWeights(ncp_ * nkb_ * kc_ * nr_);
    float* pw = packed_.data();
    for (int64_t j = 0; j < ncp_; ++j)
      for (int64_t kb = 0; kb < nkb_; ++kb) {
        const int64_t k0 = kb * kc_, kc = std::min(kc_, K_ - k0), w_ = panel_width(j);
        float* dst = pw + (kb * ncp_ + j) * kc_ * nr_;
        for (int64_t k = 0; k < kc; ++k)
          for (int64_t n = 0; n < w_; ++n) {
            const int64_t m = j * nr_ + n;
            dst[k * w_ + n] = m < p.M ? w[m * K_ + k0 + k] : 0.0f;
          }
      }
    bias_ = Tensor(DType::f32, {ncp_ * nr_});
    if (bias) std::memcpy(bias_.data<float>(), bias, static_cast<size_t>(p.M) * sizeof(float));
    has_bias_ = bias != nullptr;
    fetch_workspace();
  }

  int64_t packed_weight_bytes() const override { return packed_.nbytes() + (has_bias_ ? bias_.nbytes() : 0); }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const Scratch ws = fetch_workspace();
    const float* x = in[0].as<float>();
    const float* res = in.size() > 3 && in[3].data ? in[3].as<float>() : nullptr;
    float* y = out[0].as<float>();
    const int64_t nrows = static_cast<int64_t>(row0_.size()) - 1;
    // Channel panels per task: a few, so a task's slice of the scratch stays in L1 (3/4 of it: 24 KB
    // of Zen 3's 32 KB), but at least two tasks per thread, in whole rounds of tasks so the threads
    // finish together.
    const int64_t threads = pool.size();
    const int64_t per_task =
        std::max<int64_t>(1, std::min({ncp_ / (2 * threads), scratch_l1_bytes_ / (OHW_ * nr_ * 4), int64_t{4}}));
    const int64_t ctasks = std::min(ncp_, ceil_div(ceil_div(ncp_, per_task), threads) * threads);
    // Fewer channel panels than two per thread (MnasNet's 14x14 projections to 80-96 channels: 3
    // panels, 2 on one thread and 1 on the other) also split the pixel rows: each task then streams
    // its panels' weights for its rows only, and the threads get even shares.
    const int64_t rsplit = threads > 1 && ctasks < 2 * threads ? std::min(nrows, ceil_div(2 * threads, ctasks)) : 1;
    const int64_t tasks = ctasks * rsplit;
    for (int64_t n = 0; n < p_.N; ++n) {
      const float* xn = x + n * p_.C * p_.H * p_.W;
      if (pad_) {
        pool.parallel_for(p_.C, [&](int64_t c, int) {
          ops::copy_padded_plane(xn + c * p_.H * p_.W, p_.H, p_.W, p_.pad_top, p_.pad_left, PW_, PH_ * PW_, 0.0f,
                                 ws.padded + c * PH_ * PW_);
        });
        xn = ws.padded;
      }
      pool.parallel_for(nkb_ * nrows, [&](int64_t t, int) { pack_rows(ws, t / nrows, t % nrows, xn); });
      const float* rn = res ? res + n * p_.M * OHW_ : nullptr;
      float* yn = y + n * p_.M * OHW_;
      pool.parallel_for(tasks, [&](int64_t t, int) {
        const int64_t ct = t / rsplit, rs = t % rsplit;
        const int64_t j0 = ncp_ * ct / ctasks, j1 = ncp_ * (ct + 1) / ctasks;
        const int64_t i0 = nrows * rs / rsplit, i1 = nrows * (rs + 1) / rsplit;
        gemm(ws, j0, j1, i0, i1);
        write_back(ws, j0 * nr_, std::min(p_.M, j1 * nr_), row0_[static_cast<size_t>(i0)],
                   row0_[static_cast<size_t>(i1)], rn, yn);
      });
    }
  }

 private:
  int64_t panel_width(int64_t j) const { return p_.M - j * nr_ <= ks_.nr_tail ? ks_.nr_tail : nr_; }

  // Workspace slots: 0 the padded input, 1 the packed rows, 2 the pixels x channels scratch.
  struct Scratch {
    float* padded;
    float* rows;
    float* ct;
  };
  Scratch fetch_workspace() const {
    return {pad_ ? ops::workspace(0, p_.C * PH_ * PW_) : nullptr,
            ops::workspace(1, nkb_ * static_cast<int64_t>(row0_.size() - 1) * kc_ * ks_.mr),
            ops::workspace(2, OHW_ * ncp_ * nr_)};
  }

  float* row_panel(const Scratch& ws, int64_t kb, int64_t i) const {
    return ws.rows + (kb * static_cast<int64_t>(row0_.size() - 1) + i) * kc_ * ks_.mr;
  }

  // K block kb of pixel rows [row0_[i], row0_[i + 1]) as kc x r.
  void pack_rows(const Scratch& ws, int64_t kb, int64_t i, const float* x) const {
    const int64_t q0 = row0_[static_cast<size_t>(i)], r = row0_[static_cast<size_t>(i) + 1] - q0;
    const int64_t k0 = kb * kc_, kc = std::min(kc_, K_ - k0);
    ks_.im2col(static_cast<size_t>(kc), x, koff_.data() + k0, runs_.data() + run0_[static_cast<size_t>(i)],
               static_cast<size_t>(run0_[static_cast<size_t>(i) + 1] - run0_[static_cast<size_t>(i)]),
               static_cast<size_t>(p_.SW), static_cast<size_t>(r), row_panel(ws, kb, i));
  }

  // Channel panels [j0, j1) over all K blocks into the scratch: per panel OHW x nr, contiguous
  // (rows a power-of-two apart would fight over a few L1 sets). Bias enters with the first block;
  // the residual and the clamp with write_back.
  void gemm(const Scratch& ws, int64_t j0, int64_t j1, int64_t i0, int64_t i1) const {
    const int64_t ld = nr_, nrows = i1 - i0;
    const float* packed = packed_.data();
    for (int64_t kb = 0; kb < nkb_; ++kb) {
      const int64_t kc = std::min(kc_, K_ - kb * kc_);
      F32GemmEpilogue e;
      e.ld_init = static_cast<size_t>(ld);
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t w_ = panel_width(j);
        e.col_bias = kb == 0 && has_bias_ ? bias_.data<float>() + j * nr_ : nullptr;
        const float* b = packed + (kb * ncp_ + j) * kc_ * nr_;
        // The weights stream from memory and only the first row tile would wait for them: each row
        // tile prefetches its share of this task's next panel instead.
        const int64_t next = j + 1 < j1 ? kb * ncp_ + j + 1 : kb + 1 < nkb_ ? (kb + 1) * ncp_ + j0 : -1;
        const int64_t lines = next < 0 ? 0 : kc_ * nr_ * 4 / 64, share = ceil_div(lines, nrows);
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t q0 = row0_[static_cast<size_t>(i)], r = row0_[static_cast<size_t>(i) + 1] - q0;
          float* c = ws.ct + (j * OHW_ + q0) * nr_;
          e.init = kb == 0 ? nullptr : c;
          const int64_t pf0 = std::min(lines, (i - i0) * share);
          e.prefetch = next < 0 ? nullptr : packed + next * kc_ * nr_ + pf0 * 16;
          e.prefetch_lines = static_cast<size_t>(std::min({lines - pf0, share, kc}));
          const F32GemmUkernel uk = (w_ == nr_ ? ks_.main : ks_.tail)[r];
          uk(static_cast<size_t>(std::min(w_, p_.M - j * nr_)), static_cast<size_t>(kc), row_panel(ws, kb, i), b, c,
             static_cast<size_t>(ld), e);
        }
      }
    }
  }

  // Channels [m0, m1) x pixels [q0, q1) from the scratch into NCHW, adding the residual (if any),
  // clamping, and the post-op on each panel's channels as they land (contiguous in NCHW when the
  // range is every pixel; one call per channel row otherwise).
  void write_back(const Scratch& ws, int64_t m0, int64_t m1, int64_t q0, int64_t q1, const float* res, float* y) const {
    for (int64_t m = m0; m < m1; m += nr_) {  // m0 starts a channel panel
      const int64_t w = std::min(nr_, m1 - m);
      ks_.transpose(static_cast<size_t>(q1 - q0), static_cast<size_t>(w), ws.ct + m * OHW_ + q0 * nr_,
                    static_cast<size_t>(nr_), res ? res + m * OHW_ + q0 : nullptr, y + m * OHW_ + q0,
                    static_cast<size_t>(OHW_), p_.act_min, p_.act_max);
      if (q1 - q0 == OHW_) {
        post_(y + m * OHW_, w * OHW_);
      } else {
        for (int64_t c = m; c < m + w; ++c) post_(y + c * OHW_ + q0, q1 - q0);
      }
    }
  }

  Conv2dParams p_;
  F32GemmKernels ks_;
  int64_t scratch_l1_bytes_;  // a task's slice of the scratch, to stay in L1
  ConvPostOp post_;
  int64_t K_ = 0, OHW_ = 0, PH_ = 0, PW_ = 0, nkb_ = 0, kc_ = 0, nr_ = 0, ncp_ = 0;
  bool pad_ = false, has_bias_ = false;
  std::vector<int64_t> koff_, row0_;
  std::vector<int32_t> run0_;  // row panel i's runs: [run0_[i], run0_[i + 1])
  std::vector<F32Im2colRun> runs_;
  PackedWeights packed_;
  Tensor bias_;
};

// Lanes a dimension of n occupies in panels of nr (the last one nr_tail wide when it fits).
int64_t panel_lanes(int64_t n, const F32GemmKernels& ks) {
  const int64_t rem = n % ks.nr;
  return n / ks.nr * ks.nr + (rem == 0 ? 0 : rem <= ks.nr_tail ? ks.nr_tail : ks.nr);
}

// Channels on the lanes when that fills them better than pixels do (small images: 14x14 = 196
// pixels fill 94% of 32-wide panels, 7x7 77%, ResNet's channel counts 100%; measured 4-20% faster
// per layer with AVX-512) and the whole image's packed rows and the scratch stay small. Needs the
// ISA's transposing write-back (AVX-512 has one).
bool use_channels_on_lanes(const Conv2dParams& p, const F32GemmKernels& ks) {
  const int64_t OHW = p.OH * p.OW, K = p.C * p.KH * p.KW;
  if (!ks.transpose || p.group != 1 || OHW * K * 4 > (8 << 20) || OHW * p.M * 4 > (4 << 20)) return false;
  const double pixels = static_cast<double>(OHW) / static_cast<double>(panel_lanes(OHW, ks));
  const double channels = static_cast<double>(p.M) / static_cast<double>(panel_lanes(p.M, ks));
  return channels >= pixels + 0.05;
}

// ---- depthwise ----
//
// Flat polyphase planes (kernels/f32-dwconv/f32_dwconv.h): per channel, the padded input is split
// into its SH * SW phase planes in a per-thread scratch, the ISA kernel computes the flat outputs
// (OH rows of Wp) and stores the OW valid ones of each row with residual and clamp; the post-op runs
// on the plane just written. A task takes a run of channels (small maps: one call per 7x7 plane
// cost more than its arithmetic). Results do not depend on the thread count.
//
// Stride 1 with "same" padding (the output as large as the input: 3x3 pad 1, 5x5 pad 2), where the
// ISA has masked loads, skips the split and the store: `direct` reads the unpadded plane in place
// with each tap's lanes masked to the plane and writes the output with residual and clamp from
// registers (the same bits: the masked lanes add fma(w, 0, acc), as the padding's zeros do).
// Stride 2 with a 3x3 or 5x5 kernel likewise skips them where the ISA's `direct_s2` pays
// (AVX-512): masked load pairs deinterleaved into the even and odd taps.
class DwConv2dF32 final : public Kernel {
 public:
  DwConv2dF32(const Conv2dParams& p, const float* w, const float* bias, int threads, const Target& target,
              const F32DwconvKernels& ks)
      : p_(p), ks_(ks), post_(p, target) {
    taps_ = p.KH * p.KW;
    weights_ = Tensor(DType::f32, {p.C * taps_});
    std::memcpy(weights_.data<float>(), w, static_cast<size_t>(p.C * taps_) * sizeof(float));
    bias_ = Tensor(DType::f32, {p.C});
    if (bias) std::memcpy(bias_.data<float>(), bias, static_cast<size_t>(p.C) * sizeof(float));
    const int64_t Hp = ceil_div(p.H + p.pad_top + p.pad_bottom, p.SH);
    const int64_t Wp = ceil_div(p.W + p.pad_left + p.pad_right, p.SW);
    const auto u = [](int64_t v) { return static_cast<size_t>(v); };
    split_ = {u(p.H), u(p.W), u(p.pad_top), u(p.pad_left), u(p.SH), u(p.SW), u(Hp), u(Wp)};
    int64_t max_off = 0;
    for (int64_t kh = 0; kh < p.KH; ++kh)
      for (int64_t kw = 0; kw < p.KW; ++kw) {
        const int64_t a = kh * p.DH, b = kw * p.DW;
        const int64_t off = ((a % p.SH) * p.SW + b % p.SW) * Hp * Wp + (a / p.SH) * Wp + b / p.SW;
        off_.push_back(static_cast<int32_t>(off));
        max_off = std::max(max_off, off);
      }
    const int64_t lanes = static_cast<int64_t>(ks.lanes);
    nflat_ = ceil_div(p.OH * Wp, lanes) * lanes;
    src_floats_ = std::max(p.SH * p.SW * Hp * Wp, max_off + nflat_) + 16;
    // Channels per task: about 16K outputs each, so 7x7 maps do not pay a task per plane.
    cpt_ = ops::planes_per_task(p.OH * p.OW, 16 << 10);
    if (ks.direct && p.SH == 1 && p.SW == 1 && p.OH == p.H && p.OW == p.W &&
        static_cast<size_t>(p.H * p.W) <= ks.direct_max_n) {
      plan_direct(p, lanes);
      return;
    }
    if (ks.direct_s2 && p.SH == 2 && p.SW == 2 && p.DH == 1 && p.DW == 1 && p.KH == p.KW &&
        (p.KH == 3 || p.KH == 5) &&
        static_cast<size_t>(p.OH * p.OW) <= ks.direct_s2_max_n) {
      const auto u = [](int64_t v) { return static_cast<size_t>(v); };
      s2_ = f32_dwconv_s2_plan(u(p.H), u(p.W), u(p.OH), u(p.OW), u(p.KH), u(p.KW), u(p.pad_top), u(p.pad_left),
                               ks.lanes, s2_masks_);
      return;
    }
    ops::per_thread_workspace(threads, src_floats_ + nflat_);  // warm it now, not in the first inference
  }

  int64_t packed_weight_bytes() const override { return weights_.nbytes() + bias_.nbytes(); }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    float* const* scratch = ops::per_thread_workspace(pool.size(), src_floats_ + nflat_);
    const float* x = in[0].as<float>();
    const float* res = in.size() > 3 && in[3].data ? in[3].as<float>() : nullptr;
    float* y = out[0].as<float>();
    const int64_t OHW = p_.OH * p_.OW, planes = p_.N * p_.C;
    const int64_t tasks = ceil_div(planes, cpt_);
    if (!masks_.empty()) {
      pool.parallel_for(tasks, [&](int64_t t, int) {
        const int64_t end = std::min(planes, (t + 1) * cpt_);
        for (int64_t nc = t * cpt_; nc < end;) {
          // Two planes a call (the kernel interleaves their FMA chains), never across images.
          const int64_t c = nc % p_.C, k = std::min({int64_t{2}, end - nc, p_.C - c});
          ks_.direct(x + nc * OHW, off_.data(), masks_.data(), order_.data(), n_plain_,
                     weights_.data<float>() + c * taps_, static_cast<size_t>(taps_), bias_.data<float>() + c,
                     static_cast<size_t>(OHW),
                     static_cast<size_t>(k), res ? res + nc * OHW : nullptr, p_.act_min, p_.act_max, y + nc * OHW);
          post_(y + nc * OHW, k * OHW);  // the planes just written, in L1 or L2
          nc += k;
        }
      });
      return;
    }
    if (!s2_masks_.empty()) {
      pool.parallel_for(tasks, [&](int64_t t, int) {
        const int64_t end = std::min(planes, (t + 1) * cpt_);
        for (int64_t nc = t * cpt_; nc < end;) {
          const int64_t c = nc % p_.C, k = std::min(end - nc, p_.C - c);  // never across images
          ks_.direct_s2(x + nc * p_.H * p_.W, s2_, s2_masks_.data(), weights_.data<float>() + c * taps_,
                        bias_.data<float>() + c, static_cast<size_t>(k), res ? res + nc * OHW : nullptr, p_.act_min,
                        p_.act_max, y + nc * OHW);
          post_(y + nc * OHW, k * OHW);  // the planes just written, in L1 or L2
          nc += k;
        }
      });
      return;
    }
    pool.parallel_for(tasks, [&](int64_t t, int thread) {
      float* src = scratch[thread];
      float* flat = src + src_floats_;
      // The padding and the slack (read only by the dropped columns) stay zero across the task's
      // channels: each writes the same interior.
      std::memset(src, 0, static_cast<size_t>(src_floats_) * sizeof(float));
      for (int64_t nc = t * cpt_; nc < std::min(planes, (t + 1) * cpt_); ++nc) {
        const int64_t c = nc % p_.C;
        ks_.split(x + nc * p_.H * p_.W, split_, src);
        ks_.flat(src, off_.data(), weights_.data<float>() + c * taps_, static_cast<size_t>(taps_),
                 bias_.data<float>()[c], static_cast<size_t>(nflat_), flat);
        ks_.store(flat, split_.Wp, static_cast<size_t>(p_.OH), static_cast<size_t>(p_.OW),
                  res ? res + nc * OHW : nullptr, p_.act_min, p_.act_max, y + nc * OHW);
        post_(y + nc * OHW, OHW);  // the plane just written, in L1 or L2
      }
    });
  }

 private:
  Conv2dParams p_;
  F32DwconvKernels ks_;
  ConvPostOp post_;
  Tensor weights_, bias_;
  // The direct path's tap offsets into the unpadded plane and, per tap and vector of outputs, the
  // lanes whose input lies inside the plane (f32_dwconv.h, `direct`).
  void plan_direct(const Conv2dParams& p, int64_t lanes) {
    const int64_t n = p.H * p.W, nvec = ceil_div(n, lanes);
    off_.clear();
    masks_.assign(static_cast<size_t>(taps_ * nvec), 0);
    for (int64_t kh = 0; kh < p.KH; ++kh)
      for (int64_t kw = 0; kw < p.KW; ++kw) {
        const int64_t dh = kh * p.DH - p.pad_top, dw = kw * p.DW - p.pad_left, t = kh * p.KW + kw;
        off_.push_back(static_cast<int32_t>(dh * p.W + dw));
        for (int64_t q = 0; q < n; ++q) {
          const int64_t ih = q / p.W + dh, iw = q % p.W + dw;
          if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W)
            masks_[static_cast<size_t>(t * nvec + q / lanes)] |= static_cast<uint16_t>(1u << (q % lanes));
        }
      }
    order_.resize(static_cast<size_t>(nvec));
    n_plain_ = f32_dwconv_direct_order(masks_.data(), static_cast<size_t>(taps_), static_cast<size_t>(nvec),
                                       static_cast<size_t>(lanes), order_.data());
  }

  int64_t taps_ = 0, nflat_ = 0, src_floats_ = 0, cpt_ = 1;
  F32DwconvS2Geometry s2_{};        // direct_s2 only (f32_dwconv_s2_plan)
  std::vector<uint16_t> s2_masks_;  // direct_s2 only: [vector of a row][column pair][half]; empty: not taken
  F32DwconvSplit split_{};  // the phase planes' geometry (Hp x Wp each)
  std::vector<int32_t> off_;  // per tap: into the phase planes, or (direct) into the unpadded plane
  std::vector<uint16_t> masks_;  // direct only: [tap][vector] lanes inside the plane; empty: split path
  std::vector<uint32_t> order_;  // direct only: the vectors, those with no masked lane first
  size_t n_plain_ = 0;           // how many those are (0: all masked, in plane order)
};

// Channels on the lanes (kernels/f32-dwconv/README.md): a group of `lanes` channels at a time is
// transposed into a padded [PH][PW][lanes] scratch, every output pixel is one vector of the group's
// channels, and the result is transposed back with residual and clamp. A task takes a run of
// groups (about 4K outputs); the post-op runs on the group's planes just written. Each output is
// bias then one fma per tap in tap order: the bits of the flat path and of every other set.
class DwConv2dLanesF32 final : public Kernel {
 public:
  DwConv2dLanesF32(const Conv2dParams& p, const float* w, const float* bias, int threads, const Target& target,
                   const F32DwconvKernels& ks)
      : p_(p), ks_(ks), post_(p, target) {
    const int64_t L = static_cast<int64_t>(ks.lanes), taps = p.KH * p.KW;
    // Depthwise: L channels a block. Grouped (dense_): one conv group a block, its Cg <= L input
    // channels on the lanes and as many output channels.
    dense_ = !p.is_depthwise();
    block_ = dense_ ? p.C_per_group() : L;
    groups_ = ceil_div(p.C, block_);
    wblock_ = taps * L * (dense_ ? L : 1);
    weights_ = Tensor(DType::f32, {groups_ * wblock_});  // depthwise [block][tap][lane]; grouped [group][tap][ic][lane]
    bias_ = Tensor(DType::f32, {groups_ * L});
    float* wl = weights_.data<float>();
    float* bl = bias_.data<float>();
    std::fill(wl, wl + groups_ * wblock_, 0.0f);
    std::fill(bl, bl + groups_ * L, 0.0f);
    for (int64_t c = 0; c < p.C; ++c) {
      const int64_t b = c / block_, lane = c % block_;
      if (dense_) {
        for (int64_t ic = 0; ic < block_; ++ic)
          for (int64_t t = 0; t < taps; ++t)
            wl[b * wblock_ + (t * L + ic) * L + lane] = w[(c * block_ + ic) * taps + t];
      } else {
        for (int64_t t = 0; t < taps; ++t) wl[b * wblock_ + t * L + lane] = w[c * taps + t];
      }
      if (bias) bl[b * L + lane] = bias[c];
    }
    const auto u = [](int64_t v) { return static_cast<size_t>(v); };
    g_ = {u(p.H),  u(p.W),  u(p.OH),      u(p.OW),       u(p.KH), u(p.KW), u(p.SH), u(p.SW), u(p.DH), u(p.DW),
          u(p.pad_top), u(p.pad_left), 0, 0};
    // The padded plane as far as any tap reads (bottom / right padding past the input included).
    g_.PH = u(std::max(p.H + p.pad_top, (p.OH - 1) * p.SH + (p.KH - 1) * p.DH + 1));
    g_.PW = u(std::max(p.W + p.pad_left, (p.OW - 1) * p.SW + (p.KW - 1) * p.DW + 1));
    pad_floats_ = static_cast<int64_t>(g_.PH * g_.PW) * L;
    scratch_floats_ = pad_floats_ + p.OH * p.OW * L;
    gpt_ = std::clamp<int64_t>((4 << 10) / std::max<int64_t>(1, p.OH * p.OW * L * (dense_ ? block_ : 1)), 1, 16);
    ops::per_thread_workspace(threads, scratch_floats_);  // warm it now, not in the first inference
  }

  int64_t packed_weight_bytes() const override { return weights_.nbytes() + bias_.nbytes(); }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    float* const* scratch = ops::per_thread_workspace(pool.size(), scratch_floats_);
    const float* x = in[0].as<float>();
    const float* res = in.size() > 3 && in[3].data ? in[3].as<float>() : nullptr;
    float* y = out[0].as<float>();
    const int64_t L = static_cast<int64_t>(ks_.lanes);
    const int64_t HW = p_.H * p_.W, OHW = p_.OH * p_.OW, units = p_.N * groups_;
    pool.parallel_for(ceil_div(units, gpt_), [&](int64_t t, int thread) {
      float* sc = scratch[thread];
      // The padding stays zero across the task's groups: each writes the same interior.
      std::memset(sc, 0, static_cast<size_t>(pad_floats_) * sizeof(float));
      for (int64_t u = t * gpt_; u < std::min(units, (t + 1) * gpt_); ++u) {
        const int64_t n = u / groups_, gi = u % groups_, c0 = gi * block_, cn = std::min(block_, p_.C - c0);
        const int64_t plane = n * p_.C + c0;
        (dense_ ? ks_.lanes_group_dense : ks_.lanes_group)(
            x + plane * HW, static_cast<size_t>(cn), g_, weights_.data<float>() + gi * wblock_,
            bias_.data<float>() + gi * L, res ? res + plane * OHW : nullptr, p_.act_min, p_.act_max, y + plane * OHW,
            sc);
        post_(y + plane * OHW, cn * OHW);  // the planes just written, in L1 or L2
      }
    });
  }

 private:
  Conv2dParams p_;
  F32DwconvKernels ks_;
  ConvPostOp post_;
  Tensor weights_, bias_;
  F32DwconvLanesGeometry g_{};
  bool dense_ = false;
  int64_t block_ = 0, wblock_ = 0, groups_ = 0, pad_floats_ = 0, scratch_floats_ = 0, gpt_ = 1;
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

PackedWeights::PackedWeights(int64_t floats) : bytes_(static_cast<size_t>(floats) * sizeof(float)) {
  constexpr size_t kHuge = size_t{2} << 20;
  const bool huge = bytes_ >= kHuge / 2;
  const size_t align = huge ? kHuge : 64, size = std::max((bytes_ + align - 1) / align * align, align);
  data_.reset(static_cast<float*>(std::aligned_alloc(align, size)));
  if (!data_) throw Error("out of memory packing " + std::to_string(bytes_) + " bytes of weights");
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (huge) madvise(data_.get(), size, MADV_HUGEPAGE);  // a hint: refusal only costs speed
#endif
  std::memset(data_.get(), 0, bytes_);
}

#if defined(__x86_64__)
const F32GemmKernels& f32_gemm_kernels_avx2() {
  static const F32GemmKernels ks = [] {
    F32GemmKernels k;
    const F32GemmUkernel n16[] = {nullptr,           f32_gemm_1x16__avx2, f32_gemm_2x16__avx2, f32_gemm_3x16__avx2,
                                  f32_gemm_4x16__avx2, f32_gemm_5x16__avx2, f32_gemm_6x16__avx2};
    const F32GemmUkernel n8[] = {nullptr,          f32_gemm_1x8__avx2, f32_gemm_2x8__avx2, f32_gemm_3x8__avx2,
                                 f32_gemm_4x8__avx2, f32_gemm_5x8__avx2, f32_gemm_6x8__avx2};
    for (int mr = 1; mr <= 6; ++mr) {
      k.main[mr] = n16[mr];
      k.tail[mr] = n8[mr];
    }
    k.im2col = f32_im2col_pack__avx2;
    return k;
  }();
  return ks;
}

// 12 x 32 (24 zmm accumulators): every MR >= 6 runs at the FMA peak on cache-resident panels, and
// 12 rows halve the B panel reloads from L1 against 6. The 16-wide tail saves half the lanes on
// the last panel of 14x14 (196 = 6 x 32 + 4) and 7x7 maps.
const F32GemmKernels& f32_gemm_kernels_avx512() {
  static const F32GemmKernels ks = [] {
    F32GemmKernels k;
    k.mr = 12;
    k.nr = 32;
    k.nr_tail = 16;
    k.kc_max = 256;  // 32 KB of B per panel
#define LOWBIT_SET(MR, NR) (NR == 32 ? k.main : k.tail)[MR] = f32_gemm_##MR##x##NR##__avx512;
    LOWBIT_F32_GEMM_AVX512_TILES(LOWBIT_SET)
#undef LOWBIT_SET
    k.im2col = f32_im2col_pack__avx512;
    k.transpose = f32_transpose_store__avx512;
    return k;
  }();
  return ks;
}
#endif

#if defined(__aarch64__)
const F32GemmKernels& f32_gemm_kernels_neon() {
  static const F32GemmKernels ks = [] {
    F32GemmKernels k;
    const F32GemmUkernel n16[] = {nullptr,           f32_gemm_1x16__neon, f32_gemm_2x16__neon, f32_gemm_3x16__neon,
                                  f32_gemm_4x16__neon, f32_gemm_5x16__neon, f32_gemm_6x16__neon};
    const F32GemmUkernel n8[] = {nullptr,          f32_gemm_1x8__neon, f32_gemm_2x8__neon, f32_gemm_3x8__neon,
                                 f32_gemm_4x8__neon, f32_gemm_5x8__neon, f32_gemm_6x8__neon};
    for (int mr = 1; mr <= 6; ++mr) {
      k.main[mr] = n16[mr];
      k.tail[mr] = n8[mr];
    }
    k.im2col = f32_im2col_pack__neon;
    return k;
  }();
  return ks;
}
#endif

std::string check_conv2d_f32_igemm(const NodeContext& ctx) { return check_conv_common(ctx); }

std::unique_ptr<Kernel> create_conv2d_f32_igemm(const NodeContext& ctx, const F32GemmKernels& ks) {
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  if (use_channels_on_lanes(p, ks))
    return std::make_unique<Conv2dIgemmChannelsF32>(p, ctx.constant(1)->data<float>(), bias_data(ctx), ks,
                                                    ctx.target);
  return std::make_unique<Conv2dIgemmF32>(p, ctx.constant(1)->data<float>(), bias_data(ctx), ks, ctx.threads,
                                          ctx.target);
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_conv2d_f32_igemm_avx2(const NodeContext& ctx) {
  return create_conv2d_f32_igemm(ctx, f32_gemm_kernels_avx2());
}
std::unique_ptr<Kernel> create_conv2d_f32_igemm_avx512(const NodeContext& ctx) {
  return create_conv2d_f32_igemm(ctx, f32_gemm_kernels_avx512());
}
#endif

#if defined(__aarch64__)
std::unique_ptr<Kernel> create_conv2d_f32_igemm_neon(const NodeContext& ctx) {
  return create_conv2d_f32_igemm(ctx, f32_gemm_kernels_neon());
}
#endif

std::string check_conv2d_f32_dwconv(const NodeContext& ctx) {
  if (std::string r = check_conv_common(ctx); !r.empty()) return r;
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  if (!p.is_depthwise())
    return "group " + std::to_string(p.group) + " is not depthwise (C=" + std::to_string(p.C) +
           ", M=" + std::to_string(p.M) + ")";
  return "";
}

static std::unique_ptr<Kernel> create_conv2d_f32_dwconv(const NodeContext& ctx, const F32DwconvKernels& ks) {
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  return std::make_unique<DwConv2dF32>(p, ctx.constant(1)->data<float>(), bias_data(ctx), ctx.threads, ctx.target,
                                       ks);
}

// Where channels on the lanes beat the flat planes (bench/microbench/dw_layers, AMD Zen 5, 1 thread,
// ms flat -> lanes; AVX2 is the same host capped by LOWBIT_ISA):
//   7x7 outputs, any stride: 3x3 960 @7 0.026 -> 0.020 (AVX2 0.034 -> 0.031), 5x5 1152 @7 0.063 ->
//     0.040 (0.100 -> 0.065), 3x3/2 576 @14 0.050 -> 0.020 (0.043 -> 0.030), 5x5/2 672 @14 0.081 ->
//     0.033 (0.075 -> 0.050);
//   14x14 outputs, 5x5 or stride 2: 5x5 480 @14 0.081 -> 0.066 (0.114 -> 0.105), 5x5 672 @14 0.112
//     -> 0.090 (0.160 -> 0.147), 3x3/2 192 @28 0.035 -> 0.029 (0.039 both);
//   but 3x3 stride 1 at 14x14 stays flat (384 @14 0.029 -> 0.032, AVX2 0.042 -> 0.047): 9 taps do
//     not cover the two transposes;
//   28x28 outputs: 5x5 240 @28 0.160 -> 0.126 on AVX-512 only (AVX2 0.204 -> 0.21), 3x3 and
//     stride 2 flat (3x3/2 144 @56 0.080 -> 0.092, 3x3 192 @28 0.052 -> 0.061);
//   larger planes flat (3x3 32 @112 0.165 -> 0.219): the flat planes stream, the transposes do not.
static std::string dwconv_lanes_rule(const NodeContext& ctx, int64_t lanes) {
  if (std::string r = check_conv2d_f32_dwconv(ctx); !r.empty()) return r;
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  const int64_t out = p.OH * p.OW, taps = p.KH * p.KW;
  const bool strided = p.SH * p.SW > 1;
  const int64_t max_out = taps >= 25 ? (lanes >= 16 ? 784 : 196) : strided ? 196 : 64;
  if (out <= max_out) return "";
  return "output " + std::to_string(p.OH) + "x" + std::to_string(p.OW) + " is over the " + std::to_string(max_out) +
         " pixels where " + std::to_string(lanes) + " channels on the lanes beat the flat planes for a " +
         std::to_string(p.KH) + "x" + std::to_string(p.KW) + (strided ? " strided" : " stride-1") + " kernel";
}

// Grouped convs with at most `lanes` channels per group (RegNet's groups of 8, ResNeXt's of 4-32)
// on the depthwise kernel's channels-on-lanes layout: per output pixel and tap, Cg broadcast
// input channels times weight vectors over the group's output channels. The implicit GEMM ran
// such a group as an 8 x 72 tile row (RegNet-Y 400MF's 440-channel stage on 7x7: 0.195 ms, ORT
// 0.093).
static std::string gconv_lanes_rule(const NodeContext& ctx, int64_t lanes) {
  if (std::string r = check_conv_common(ctx); !r.empty()) return r;
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  if (p.group == 1) return "not a grouped conv (group 1)";
  if (p.is_depthwise()) return "depthwise (the dwconv rows take it)";
  if (p.C_per_group() != p.M_per_group())
    return "grouped with " + std::to_string(p.C_per_group()) + " input and " + std::to_string(p.M_per_group()) +
           " output channels per group; needs as many of each";
  if (p.C_per_group() > lanes)
    return std::to_string(p.C_per_group()) + " channels per group, over the " + std::to_string(lanes) + " lanes";
  // A group on at most half the lanes wastes the rest: measured on AMD Zen 3 (AVX2, 1 thread, ms
  // igemm -> lanes), groups of 4 gain on 7x7 (0.40 -> 0.20) and 14x14 (0.92 -> 0.71) but lose on
  // 28x28 (1.17 -> 1.47) and 56x56 (ResNeXt-50's stage 1: 0.92 -> 1.47); groups of 8 gain on every
  // plane (7x7 0.42 -> 0.14, 56x56 4.64 -> 4.40). AVX-512 applies the same rule in lanes, unmeasured.
  if (2 * p.C_per_group() <= lanes && p.OH * p.OW > 196)
    return std::to_string(p.C_per_group()) + " channels per group fill at most half the " + std::to_string(lanes) +
           " lanes, and the output " + std::to_string(p.OH) + "x" + std::to_string(p.OW) +
           " is over the 196 pixels where that still beats the implicit GEMM";
  return "";
}

std::string check_conv2d_f32_gconv_lanes16(const NodeContext& ctx) { return gconv_lanes_rule(ctx, 16); }
std::string check_conv2d_f32_gconv_lanes8(const NodeContext& ctx) { return gconv_lanes_rule(ctx, 8); }

std::string check_conv2d_f32_dwconv_lanes16(const NodeContext& ctx) { return dwconv_lanes_rule(ctx, 16); }
std::string check_conv2d_f32_dwconv_lanes8(const NodeContext& ctx) { return dwconv_lanes_rule(ctx, 8); }

#if defined(__x86_64__)  // AArch64 has the kernel (tested) but no row yet: f32-dwconv/README.md
static std::unique_ptr<Kernel> create_conv2d_f32_dwconv_lanes(const NodeContext& ctx, const F32DwconvKernels& ks) {
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  return std::make_unique<DwConv2dLanesF32>(p, ctx.constant(1)->data<float>(), bias_data(ctx), ctx.threads,
                                            ctx.target, ks);
}
#endif

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_conv2d_f32_dwconv_avx2(const NodeContext& ctx) {
  return create_conv2d_f32_dwconv(ctx, *f32_dwconv_avx2());
}
std::unique_ptr<Kernel> create_conv2d_f32_dwconv_avx512(const NodeContext& ctx) {
  return create_conv2d_f32_dwconv(ctx, *f32_dwconv_avx512());
}
std::unique_ptr<Kernel> create_conv2d_f32_dwconv_lanes_avx2(const NodeContext& ctx) {
  return create_conv2d_f32_dwconv_lanes(ctx, *f32_dwconv_avx2());
}
std::unique_ptr<Kernel> create_conv2d_f32_dwconv_lanes_avx512(const NodeContext& ctx) {
  return create_conv2d_f32_dwconv_lanes(ctx, *f32_dwconv_avx512());
}
#endif
#if defined(__aarch64__)
std::unique_ptr<Kernel> create_conv2d_f32_dwconv_neon(const NodeContext& ctx) {
  return create_conv2d_f32_dwconv(ctx, *f32_dwconv_neon());
}
#endif

}  // namespace lowbit
