// QConv driver: implicit GEMM over the qu8 micro-kernels (kernels/qu8-gemm/README.md).
//
// Same orientation as the fp32 driver: rows = output channels (weights packed once at creation
// into K x MR panels of int32 words, each holding KG consecutive-k weights), columns = output
// pixels (im2col-packed per panel of nr pixels into thread-local scratch), so a tile row stores
// nr consecutive u8 pixels straight into NCHW.
//
// Zero point of x: padding positions read zp_x. With whole k groups per channel count, K runs
// tap-major and the packers leave pixels in the padding out of the tap's runs, filling zp_x (no
// copy of the input); else a padded copy, its border filled once at creation, is refreshed per
// run. The AVX2 and NEON kernels subtract zp_x while packing; the VNNI kernels multiply raw u8
// and start each accumulator at -zp_x * sum_k w[m][k] instead (sdot: s8 = x - 128, and
// (128 - zp_x) * sum_k w). All give the integers of the contract.
//
// K is split into blocks of at most ks.kc_max values so that a packed panel stays in L1; the
// int32 partial sums of a panel live in per-thread scratch between blocks. A task is a pixel
// panel (with a narrow last panel riding along) x a range of channel panels; when tasks split a
// panel's channels, its B is packed once into a shared buffer first. Every output byte is a
// function of integers only, so results are identical for any thread count.
#include "lowbit/operators/qconv2d_u8.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "lowbit/common/error.h"
#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/qsub-gemm/qsub_panel.h"
#include "lowbit/operators/operator_util.h"
#include "lowbit/operators/requant.h"

namespace lowbit {
namespace {

using ops::ceil_div;

// Bytes of per-thread scratch: a float ThreadScratch sized in floats.
int64_t floats_for(int64_t bytes) { return ceil_div(bytes, 4) + 16; }

class QConv2dIgemm final : public Kernel {
 public:
  QConv2dIgemm(const NodeContext& ctx, const Conv2dParams& p, const Qu8GemmKernels& ks, bool packed_weights)
      : p_(p), ks_(ks), rq_(ctx, p.M, 3) {
    const QuantParams& qx = *ctx.in(0).quant;
    zp_x_ = static_cast<uint8_t>(qx.zero_point[0]);

    Cg_ = p.C_per_group();
    Mg_ = p.M_per_group();
    K_ = Cg_ * p.KH * p.KW;
    const int64_t kg = ks.kg;
    Kp_ = ceil_div(K_, kg) * kg;
    OHW_ = p.OH * p.OW;
    const bool pad = p.pad_top || p.pad_left || p.pad_bottom || p.pad_right;
    // Padding without a padded copy: K runs tap-major (k = (kh * KW + kw) * Cg + c) so that each k
    // group has one tap, and each (pixel panel, tap) has its own runs, which leave out the pixels
    // whose source lies in the padding (the packers fill those with zp_x). Needs whole k groups
    // per tap. Else a padded copy of the input, its border zp_x, is refreshed every run.
    // Group-wise weights need K tap-major too (a group is block_ input channels at one tap).
    block_ = ctx.in(1).quant->block_size;
    taps_ = (pad || block_ > 0) && Cg_ % kg == 0 ? p.KH * p.KW : 1;
    padded_copy_ = pad && taps_ == 1;
    PH_ = padded_copy_ ? p.H + p.pad_top + p.pad_bottom : p.H;
    PW_ = padded_copy_ ? p.W + p.pad_left + p.pad_right : p.W;
    // The padded copy (workspace slot 2, rewritten border and all by every run: the workspace
    // is the calling thread's, shared with other kernels). 64 bytes of slack let the packers use
    // vector loads up to the end.
    padded_bytes_ = padded_copy_ ? p.C * PH_ * PW_ + 64 : 0;

    // koff_[k]: where row k of the im2col matrix starts (plus a run's src); wk[k]: its column in
    // the weights (their k order is c-major, the reference's).
    koff_.assign(static_cast<size_t>(Kp_), 0);
    std::vector<int64_t> wk(static_cast<size_t>(Kp_), -1);
    for (int64_t c = 0; c < Cg_; ++c)
      for (int64_t kh = 0; kh < p.KH; ++kh)
        for (int64_t kw = 0; kw < p.KW; ++kw) {
          const int64_t tap = kh * p.KW + kw;
          if (taps_ > 1) {
            koff_[static_cast<size_t>(tap * Cg_ + c)] = c * PH_ * PW_;
            wk[static_cast<size_t>(tap * Cg_ + c)] = c * p.KH * p.KW + tap;
          } else {
            koff_[static_cast<size_t>(c * p.KH * p.KW + tap)] = c * PH_ * PW_ + kh * p.DH * PW_ + kw * p.DW;
            wk[static_cast<size_t>(c * p.KH * p.KW + tap)] = c * p.KH * p.KW + tap;
          }
        }
    // k >= K (group padding) has zero weights; its offset only needs to be readable.

    const int64_t ngroups = Kp_ / kg;
    mpanels_ = ceil_div(Mg_, ks.mr);
    nkb_ = ceil_div(Kp_, ks.kc_max);
    kgb_ = ceil_div(ngroups, nkb_);  // k groups per block (the last block may be shorter)
    if (block_ > 0) {
      // One K block per weight group (the check keeps block_ a multiple of kg dividing Cg): its
      // int32 sums come out of the tiles in partial mode and are scaled on their own.
      kgb_ = block_ / kg;
      nkb_ = Kp_ / block_;
    }

    // Weights: per group and K block, panels of mr output channels (the last one narrower), each
    // nkg x mr words. K-block-major: a pixel panel's pass over one K block then reads the weights
    // as one sequential stream, which the hardware prefetchers follow (panel-major, the blocks of
    // consecutive channel panels lie K apart, and multi-MB weights arrive cache miss by miss).
    //
    // 4- and 2-bit weights stay packed when the set can expand them (kernels/qsub-gemm/qsub_panel.h):
    // each block is stored as chunks of packed codes, and expanded into L1 scratch per tile.
    const int64_t mr_max = ks.mr;
    // Three weight layouts: int8 words; words of 8 / b k groups of b-bit codes that the tiles
    // unpack in registers (ks.weight_bits = b < 8); packed chunks expanded per run (ks.expand_for).
    const int wbits = bit_width(code_dtype(ctx.in(1)));
    if (ks.weight_bits < 8 && ks.weight_bits != wbits)
      throw Error("QConv '" + ctx.node.name + "': kernel set for " + std::to_string(ks.weight_bits) +
                  "-bit weights given " + std::to_string(wbits) + "-bit codes");
    reg_bits_ = ks.weight_bits;
    expand_ = packed_weights && wbits < 8 && reg_bits_ == 8 ? ks.expand_for(wbits) : nullptr;
    wbits_ = expand_ ? wbits : 8;
    const int64_t step = 8 / reg_bits_;  // k groups per weight word
    const int64_t elem = ks.widened ? 2 : 1;  // bytes per weight in the tiles' words
    std::vector<int64_t> block_bytes;
    for (int64_t gi = 0; gi < p.group; ++gi)
      for (int64_t kb = 0; kb < nkb_; ++kb)
        for (int64_t m0 = 0; m0 < Mg_; m0 += mr_max) {
          const int64_t mr = std::min(mr_max, Mg_ - m0), nkg = std::min(kgb_, ngroups - kb * kgb_);
          block_bytes.push_back(expand_ ? subbyte_block_bytes(mr * nkg * kg, wbits_)
                                        : mr * ceil_div(nkg, step) * kg * elem);
        }
    ablock_.assign(block_bytes.size() + 1, 0);
    for (size_t i = 0; i < block_bytes.size(); ++i) ablock_[i + 1] = ablock_[i] + block_bytes[i];
    // Expanded blocks (whole chunks of 64 codes each, so that blocks expand in parallel).
    eblock_.assign(block_bytes.size() + 1, 0);
    for (size_t i = 0; i < block_bytes.size(); ++i) eblock_[i + 1] = eblock_[i] + block_bytes[i] * 8 / wbits_;
    // The weights' own sums, one int32 per output channel (or per group and channel): row_init_ /
    // grow_init_ below.
    const size_t ninit = block_ > 0 ? (ks.widened ? 0 : static_cast<size_t>(nkb_ * p.M))
                                     : (ks.widened ? 0 : static_cast<size_t>(p.M));
    const int64_t wbytes = ablock_.back() + 64;
    // A layout stored on the node by `quantize --prepack` (Kernel::prepacked) is read in place when
    // it names this very layout: the kernel set and tile, the shapes, zp_x and the weights' hash. The
    // hash (a pass over all the weights) is only taken when a blob of the right size is there.
    weights_ = *ctx.constant(1);
    char key[320];
    std::snprintf(key, sizeof key,
                  "qconv-igemm/1 isa=%s mr=%d kg=%d kc=%d nr=%d/%d widened=%d wbits=%d/%d xshift=%d g=%lld M=%lld "
                  "K=%lld taps=%lld block=%lld zpx=%d bytes=%lld+%zu",
                  ks.isa, ks.mr, ks.kg, ks.kc_max, ks.nr, ks.nr_tail, ks.widened ? 1 : 0, reg_bits_, wbits_,
                  static_cast<int>(ks.x_shift), static_cast<long long>(p.group), static_cast<long long>(p.M),
                  static_cast<long long>(K_), static_cast<long long>(taps_), static_cast<long long>(block_), zp_x_,
                  static_cast<long long>(wbytes), ninit * 4);
    key_prefix_ = key;
    const Tensor* stored = ctx.node.attrs.get_tensor(kPrepackedAttr);
    if (stored && stored->dtype() == DType::u8 && stored->nbytes() == wbytes + static_cast<int64_t>(ninit * 4) &&
        ctx.node.attrs.get_string(kPrepackedKeyAttr, "") == layout_key()) {
      packed_ = *stored;
      std::vector<int32_t>& init = block_ > 0 ? grow_init_ : row_init_;
      init.resize(ninit);
      if (ninit) std::memcpy(init.data(), stored->data<uint8_t>() + wbytes, ninit * 4);
      stored_ = true;
    } else {
      pack_weights(ctx, p, ks, wk);
    }
    if (block_ > 0) {
      // Per group (K block kb, tap-major: tap kb * block_ / Cg, input channels from kb * block_ % Cg)
      // and output channel: the requantization scale s_x * s_w[m][group] / s_y.
      const QuantParams& qw = *ctx.in(1).quant;
      const WeightGroups wgr = weight_groups({p.M, Cg_, p.KH, p.KW}, block_);
      const double s_x = qx.scale[0], s_y = ctx.out(0).quant->scale[0];
      gscale_.assign(static_cast<size_t>(nkb_ * p.M), 0.0f);
      for (int64_t kb = 0; kb < nkb_; ++kb) {
        const int64_t tap = kb * block_ / Cg_, c0 = kb * block_ % Cg_;
        for (int64_t m = 0; m < p.M; ++m)
          gscale_[static_cast<size_t>(kb * p.M + m)] =
              static_cast<float>(s_x * qw.scale[static_cast<size_t>(wgr.index(m, c0, tap))] / s_y);
      }
    }

    // The sums come out 2^(8 - b) times too large; fmaf(float(2^j acc), scale / 2^j, bias) is the
    // same float as fmaf(float(acc), scale, bias) (powers of two commute with rounding; the check
    // keeps scale / 2^j a normal float), so the bytes stay the reference's.
    if (reg_bits_ < 8)
      for (float& sc : rq_.scale) sc = std::ldexp(sc, -(8 - reg_bits_));

    // Pixel panels and their im2col runs per tap (consecutive pixels whose sources are SW apart;
    // without a padded copy, pixels whose source is padding belong to no run).
    for (int64_t p0 = 0; p0 < OHW_; p0 += ks.nr) {
      Panel pan;
      pan.p0 = p0;
      pan.nvalid = static_cast<int32_t>(std::min<int64_t>(ks.nr, OHW_ - p0));
      pan.tail = pan.nvalid <= ks.nr_tail;
      pan.runs = static_cast<int32_t>(run_index_.size());
      for (int64_t tap = 0; tap < taps_; ++tap) {
        const size_t first = runs_.size();
        run_index_.push_back(static_cast<int32_t>(first));
        for (int64_t q = p0; q < p0 + pan.nvalid; ++q) {
          int64_t src = (q / p.OW) * p.SH * PW_ + (q % p.OW) * p.SW;
          if (taps_ > 1) {
            const int64_t ih = (q / p.OW) * p.SH - p.pad_top + (tap / p.KW) * p.DH;
            const int64_t iw = (q % p.OW) * p.SW - p.pad_left + (tap % p.KW) * p.DW;
            if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
            src = ih * p.W + iw;
          }
          const int32_t dst = static_cast<int32_t>(q - p0);
          if (runs_.size() > first) {
            Qu8Im2colRun& last = runs_.back();
            if (last.dst + last.len == dst && last.src + last.len * p.SW == src) {
              ++last.len;
              continue;
            }
          }
          runs_.push_back({src, dst, 1});
        }
      }
      run_index_.push_back(static_cast<int32_t>(runs_.size()));
      panels_.push_back(pan);
    }
    // A last panel of a few pixels for the channels-in-lanes kernel rides with the panel before
    // it: that task runs both per K block and channel panel, while the block's weights are in
    // L1. On its own it would stream every weight once more for those few pixels (ResNet's 7 x 7
    // maps, 48 + 1 pixels: 13% of a layer's time for 2% of its pixels).
    for (size_t i = 0; i < panels_.size(); ++i) {
      const Panel& pan = panels_[i];
      if (i + 2 == panels_.size() && !pan.tail && narrow_panel(panels_[i + 1])) {
        tasks_.push_back({static_cast<int32_t>(i), static_cast<int32_t>(i + 1)});
        break;
      }
      tasks_.push_back({static_cast<int32_t>(i), -1});
    }

    prefetch_weights_ = tasks_.size() == 1;
    // Packed weights that several pixel tasks read are expanded once per run, in parallel, into a
    // workspace the tiles then read as int8 panels (the weights of a layer with several pixel
    // panels stay in the caches between them, as int8 panels would); with one pixel task each
    // block is read once, so it is expanded into L1 right before its tiles (streaming half or a
    // quarter of the bytes). Either way each weight is expanded once per run: expanded per tile
    // and pixel panel, the packed rows ran 5-10% behind the int8 rows on ResNet-50's 56 x 56 and
    // 28 x 28 layers (Zen 4, bench/microbench/qsub_layers).
    expand_all_ = expand_ && tasks_.size() > 1;
    bbytes_ = kgb_ * kg * ks.nr * elem;
    rbytes_ = kgb_ * kg * ks.nr_tail * elem;
    partial_words_ = mpanels_ * mr_max * ks.nr;
    abytes_ = expand_ ? ceil_div(mr_max * kgb_ * kg, 64) * 64 + 64 : 0;
    // Group-wise weights: float sums beside the int32 ones, one per partial word.
    const int64_t fbytes = block_ > 0 ? partial_words_ * 4 + 64 : 0;
    scratch_floats_ =
        floats_for(bbytes_ + 64 + rbytes_ + 64 + (partial_words_ + mpanels_ * kRiderWords) * 4 + abytes_ + fbytes);
    ops::per_thread_workspace(ctx.threads, scratch_floats_, 3);  // warm it now, not in the first inference
  }

  // Packs the node's weights into packed_ (the layout above: wk[k] is the weights' column of
  // im2col row k) and computes row_init_ / grow_init_ from them.
  void pack_weights(const NodeContext& ctx, const Conv2dParams& p, const Qu8GemmKernels& ks,
                    const std::vector<int64_t>& wk) {
    const Tensor w_i8 = ops::weights_i8(ctx);  // sub-byte codes unpacked once
    const int8_t* w = w_i8.data<int8_t>();
    const int64_t kg = ks.kg, mr_max = ks.mr, ngroups = Kp_ / kg, step = 8 / reg_bits_, elem = ks.widened ? 2 : 1;
    // One block's weights as the tiles read them: per k group, per row, kg values (int8, or int16
    // when widened), lowest k first.
    std::vector<uint8_t> vals(static_cast<size_t>(mr_max * kgb_ * kg * elem));
    packed_ = Tensor(DType::u8, {ablock_.back() + 64});
    size_t bi = 0;
    for (int64_t gi = 0; gi < p.group; ++gi)
      for (int64_t kb = 0; kb < nkb_; ++kb)
        for (int64_t m0 = 0; m0 < Mg_; m0 += mr_max, ++bi) {
          const int64_t mr = std::min(mr_max, Mg_ - m0), kk0 = kb * kgb_, nkg = std::min(kgb_, ngroups - kk0);
          for (int64_t kk = 0; kk < nkg; ++kk)
            for (int64_t r = 0; r < mr; ++r)
              for (int64_t i = 0; i < kg; ++i) {
                const int64_t k = wk[static_cast<size_t>((kk0 + kk) * kg + i)];
                // int16, little endian: its low byte is the int8 value (elem 1).
                const int16_t v = static_cast<int16_t>(k >= 0 ? w[(gi * Mg_ + m0 + r) * K_ + k] : 0);
                std::memcpy(&vals[static_cast<size_t>(((kk * mr + r) * kg + i) * elem)], &v, static_cast<size_t>(elem));
              }
          uint8_t* dst = packed_.data<uint8_t>() + ablock_[bi];
          if (expand_) {
            pack_subbyte_block(reinterpret_cast<const int8_t*>(vals.data()), mr * nkg * kg, wbits_, dst);
          } else if (reg_bits_ < 8) {
            // Word (s, r) of a kg = 4 set: byte i holds the codes of k groups s * step + q at bits
            // [8 - b (q + 1), 8 - b q) (q = 0 on top), as the tiles' weight_group reads them.
            const uint32_t mask = (1u << reg_bits_) - 1u;
            for (int64_t st = 0; st < ceil_div(nkg, step); ++st)
              for (int64_t r = 0; r < mr; ++r) {
                uint32_t word = 0;
                for (int64_t q = 0; q < step && st * step + q < nkg; ++q)
                  for (int i = 0; i < 4; ++i)
                    word |= ((vals[static_cast<size_t>(((st * step + q) * mr + r) * 4 + i)] & mask)
                             << (8 - reg_bits_ * (q + 1))) << (8 * i);
                std::memcpy(dst + (st * mr + r) * 4, &word, 4);
              }
          } else {
            std::memcpy(dst, vals.data(), static_cast<size_t>(mr * nkg * kg * elem));
          }
        }
    if (block_ > 0) {
      // Per group (K block kb: tap kb * block_ / Cg, input channels from kb * block_ % Cg) and
      // output channel, for the unwidened sets: the group's (x_shift - zp_x) * sum w.
      if (!ks.widened) grow_init_.assign(static_cast<size_t>(nkb_ * p.M), 0);
      for (int64_t kb = 0; kb < nkb_ && !ks.widened; ++kb) {
        const int64_t tap = kb * block_ / Cg_, c0 = kb * block_ % Cg_;
        for (int64_t m = 0; m < p.M; ++m) {
          int64_t sum = 0;
          for (int64_t c = c0; c < c0 + block_; ++c) sum += w[(m * Cg_ + c) * p.KH * p.KW + tap];
          grow_init_[static_cast<size_t>(kb * p.M + m)] =
              static_cast<int32_t>(static_cast<uint32_t>((ks.x_shift - static_cast<int64_t>(zp_x_)) * sum));
        }
      }
    } else if (!ks.widened) {
      // (x_shift - zp_x) * sum_k w: the kernel sums (x - x_shift) * w (raw u8 for VNNI, s8 for sdot);
      // plus this it equals sum (x - zp_x) * w (mod 2^32).
      row_init_.resize(static_cast<size_t>(p.M));
      for (int64_t m = 0; m < p.M; ++m) {
        int64_t s = 0;
        for (int64_t k = 0; k < K_; ++k) s += w[m * K_ + k];
        // Weights unpacked in registers read as 2^(8 - b) w: so does the sum (mod 2^32; the check
        // keeps 2^(8 - b) |acc| below 2^31).
        row_init_[static_cast<size_t>(m)] = static_cast<int32_t>(static_cast<uint32_t>(
            (ks.x_shift - static_cast<int64_t>(zp_x_)) * s * (int64_t{1} << (8 - reg_bits_))));
      }
    }
  }

  int64_t packed_weight_bytes() const override {
    const size_t inits = row_init_.size() + grow_init_.size() + gscale_.size();
    return ablock_.back() + 64 + static_cast<int64_t>((rq_.scale.size() + rq_.bias.size() + inits) * 4);
  }

  // The blob: packed_'s weight blocks (and their 64 bytes of slack), then row_init_ or grow_init_.
  bool prepacked(std::string& key, Tensor& blob) const override {
    key = layout_key();
    if (stored_) {
      blob = packed_;
      return true;
    }
    const std::vector<int32_t>& init = block_ > 0 ? grow_init_ : row_init_;
    const int64_t wbytes = ablock_.back() + 64;
    blob = Tensor(DType::u8, {wbytes + static_cast<int64_t>(init.size() * 4)});
    std::memcpy(blob.raw(), packed_.raw(), static_cast<size_t>(wbytes));
    if (!init.empty()) std::memcpy(blob.data<uint8_t>() + wbytes, init.data(), init.size() * 4);
    return true;
  }
  bool uses_prepacked() const override { return stored_; }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    const int threads = pool.size();
    // Workspace slots: 0 the shared B panels, 1 the expanded weights, 2 the padded copy, 3 + t
    // thread t's scratch.
    float* const* scratch = ops::per_thread_workspace(threads, scratch_floats_, 3);
    uint8_t* const padded = padded_copy_ ? reinterpret_cast<uint8_t*>(ops::workspace(2, floats_for(padded_bytes_))) : nullptr;
    const uint8_t* x = in[0].as<uint8_t>();
    const uint8_t* res = in.size() > 3 && in[3].data ? in[3].as<uint8_t>() : nullptr;
    uint8_t* y = out[0].as<uint8_t>();
    const int64_t npanels = static_cast<int64_t>(tasks_.size());
    const int64_t outer = p_.group * npanels;
    const int8_t* expanded = nullptr;
    if (expand_all_) {
      int8_t* e = reinterpret_cast<int8_t*>(ops::workspace(1, floats_for(eblock_.back())));
      const uint8_t* packed = packed_.data<uint8_t>();
      pool.parallel_for(static_cast<int64_t>(ablock_.size() - 1), [&](int64_t bi, int) {
        expand_(packed + ablock_[static_cast<size_t>(bi)], static_cast<size_t>(chunks_of(static_cast<size_t>(bi))),
                e + eblock_[static_cast<size_t>(bi)]);
      });
      expanded = e;
    }
    // Enough tasks for the pool: split the output channels too when panels are few.
    const int64_t msplit = threads == 1 || outer >= 4 * threads ? 1 : std::min(mpanels_, ceil_div(4 * threads, outer));
    for (int64_t n = 0; n < p_.N; ++n) {
      const uint8_t* xn = x + n * p_.C * p_.H * p_.W;
      int64_t avail = p_.C * p_.H * p_.W;
      if (padded_copy_) {
        uint8_t* pd = padded;
        const auto zp = static_cast<int>(zp_x_);
        // By row blocks, not channels: each thread copies the rows its own pixel panels read.
        const int64_t nb = ops::row_blocks(PH_, threads);
        pool.parallel_for(nb, [&](int64_t b, int) {
          for (int64_t c = 0; c < p_.C; ++c)
            for (int64_t ph = PH_ * b / nb; ph < PH_ * (b + 1) / nb; ++ph) {
              uint8_t* row = pd + (c * PH_ + ph) * PW_;
              const int64_t h = ph - p_.pad_top;
              if (h < 0 || h >= p_.H) {
                std::memset(row, zp, static_cast<size_t>(PW_));
                continue;
              }
              std::memset(row, zp, static_cast<size_t>(p_.pad_left));
              std::memcpy(row + p_.pad_left, xn + (c * p_.H + h) * p_.W, static_cast<size_t>(p_.W));
              std::memset(row + p_.pad_left + p_.W, zp, static_cast<size_t>(PW_ - p_.pad_left - p_.W));
            }
        });
        std::memset(pd + p_.C * PH_ * PW_, zp, 64);
        xn = pd;
        avail = padded_bytes_;
      }
      const uint8_t* rn = res ? res + n * p_.M * OHW_ : nullptr;
      uint8_t* yn = y + n * p_.M * OHW_;
      // Tasks that split a panel's channels would each pack its B: with msplit > 1 the panels are
      // packed once, in parallel, into a shared buffer first (7 x 7 maps on 2 threads: one 48 + 1
      // panel split 8 ways packed its 4608 x 49 bytes 8 times, 3% of the run).
      uint8_t* shared = nullptr;
      if (msplit > 1) {
        shared = reinterpret_cast<uint8_t*>(ops::workspace(0, floats_for(outer * nkb_ * shared_stride() + 64)));
        pool.parallel_for(outer * nkb_, [&](int64_t t, int) {
          const int64_t kb = t % nkb_, pi = (t / nkb_) % npanels, g = t / (nkb_ * npanels);
          const Task task = tasks_[static_cast<size_t>(pi)];
          uint8_t* b = shared + t * shared_stride();
          const int64_t gofs = g * Cg_ * PH_ * PW_;
          pack_block(panels_[static_cast<size_t>(task.lead)], kb, xn + gofs, avail - gofs, b);
          if (task.rider >= 0) pack_block(panels_[static_cast<size_t>(task.rider)], kb, xn + gofs, avail - gofs, b + rider_offset());
        });
      }
      pool.parallel_for(outer * msplit, [&](int64_t t, int thread) {
        const int64_t ms = t % msplit, pi = (t / msplit) % npanels, g = t / (msplit * npanels);
        tile_panel(g, pi, mpanels_ * ms / msplit, mpanels_ * (ms + 1) / msplit, xn, avail, rn, yn,
                   reinterpret_cast<uint8_t*>(scratch[thread]),
                   shared ? shared + (g * npanels + pi) * nkb_ * shared_stride() : nullptr, expanded);
      });
    }
  }

 private:
  // The weight block of channel panel mp, K block kb, group g (layout above): its bytes in packed_
  // are [ablock_[i], ablock_[i + 1]).
  size_t block_index(int64_t g, int64_t mp, int64_t kb) const {
    return static_cast<size_t>((g * nkb_ + kb) * mpanels_ + mp);
  }

  struct Panel {
    int64_t p0;
    int32_t nvalid;
    int32_t runs;  // tap t's runs: runs_[run_index_[runs + t]] up to runs_[run_index_[runs + t + 1]]
    bool tail;
  };
  // One task's panels: `lead`, and a narrow panel riding along (-1: none).
  struct Task {
    int32_t lead, rider;
  };
  // Partial-sum words per channel panel a rider may need (narrow kernels: narrow_max x 16 at most).
  static constexpr int64_t kRiderWords = 16 * 16;

  // (Not with group-wise weights: their float sums keep the tiles' row-major partial layout.)
  bool narrow_panel(const Panel& pan) const { return block_ == 0 && pan.tail && pan.nvalid <= ks_.narrow_max; }

  // Packs K block kb of panel pan into b: one packer call per tap the block spans.
  void pack_block(const Panel& pan, int64_t kb, const uint8_t* xg, int64_t avail, uint8_t* b) const {
    const int64_t kg = ks_.kg, kk0 = kb * kgb_, end = kk0 + std::min(kgb_, Kp_ / kg - kk0);
    const int64_t nr = pan.tail ? ks_.nr_tail : ks_.nr, group_bytes = nr * kg * (ks_.widened ? 2 : 1);
    const Qu8Im2colPack pack = pan.tail ? ks_.pack_tail : ks_.pack;
    for (int64_t g = kk0; g < end;) {
      const int64_t tap = taps_ > 1 ? g * kg / Cg_ : 0, next = taps_ > 1 ? std::min(end, (tap + 1) * Cg_ / kg) : end;
      const int32_t r0 = run_index_[static_cast<size_t>(pan.runs + tap)], r1 = run_index_[static_cast<size_t>(pan.runs + tap + 1)];
      pack(static_cast<size_t>(next - g), xg, static_cast<size_t>(avail), koff_.data() + g * kg, runs_.data() + r0,
           static_cast<size_t>(r1 - r0), static_cast<size_t>(p_.SW), static_cast<size_t>(nr), zp_x_,
           b + (g - kk0) * group_bytes);
      g = next;
    }
  }

  // The micro-kernel table a panel runs on. Narrow panels (a few pixels, e.g. 7 x 7 = 3 x 16 + 1)
  // run channels in lanes on the same packing.
  const Qu8GemmUkernel* table_of(const Panel& pan) const {
    return narrow_panel(pan) ? ks_.narrow : pan.tail ? ks_.tail : ks_.main;
  }

  // A K block's packed B in the shared buffer: the lead panel's, then the rider's.
  int64_t rider_offset() const { return ceil_div(bbytes_ + 64, 64) * 64; }
  int64_t shared_stride() const { return rider_offset() + ceil_div(rbytes_ + 64, 64) * 64; }

  // Task ti's channel panels [mp0, mp1): per K block its panels' B, packed into scratch here or
  // read from `shared` (nkb_ blocks of shared_stride() bytes), against each channel panel.
  // Chunks of 64 codes in weight block bi (packed sub-byte blocks only).
  int64_t chunks_of(size_t bi) const { return (ablock_[bi + 1] - ablock_[bi]) * 8 / (wbits_ * kSubbyteChunkCodes); }

  // expanded: every weight block expanded to int8 (eblock_ offsets) for this run, or nullptr.
  void tile_panel(int64_t g, int64_t ti, int64_t mp0, int64_t mp1, const uint8_t* x, int64_t avail,
                  const uint8_t* res, uint8_t* y, uint8_t* scratch, const uint8_t* shared,
                  const int8_t* expanded) const {
    const Task task = tasks_[static_cast<size_t>(ti)];
    const Panel& pan = panels_[static_cast<size_t>(task.lead)];
    const Panel* rider = task.rider >= 0 ? &panels_[static_cast<size_t>(task.rider)] : nullptr;
    const int64_t kg = ks_.kg, mr_max = ks_.mr;
    const int64_t nr = pan.tail ? ks_.nr_tail : ks_.nr;
    const int64_t gofs = g * Cg_ * PH_ * PW_;
    const uint8_t* xg = x + gofs;
    // Scratch (64-byte aligned, ThreadScratch): B of the lead panel, B of the rider, partial sums.
    uint8_t* bbuf = scratch;
    uint8_t* rbuf = bbuf + ceil_div(bbytes_ + 64, 64) * 64;
    int32_t* partial = reinterpret_cast<int32_t*>(rbuf + ceil_div(rbytes_ + 64, 64) * 64);
    int32_t* rpartial = partial + partial_words_;
    int8_t* abuf = reinterpret_cast<int8_t*>(rpartial + mpanels_ * kRiderWords);  // expanded sub-byte block
    float* fsum = reinterpret_cast<float*>(abuf + abytes_);  // group-wise weights: float sums (partial's layout)
    const uint8_t* packed = packed_.data<uint8_t>();
    const int64_t ngroups = Kp_ / kg;
    const Qu8GemmUkernel* table = table_of(pan);
    const Qu8GemmUkernel* rtable = rider ? table_of(*rider) : nullptr;
    for (int64_t kb = 0; kb < nkb_; ++kb) {
      const int64_t kk0 = kb * kgb_, nkg = std::min(kgb_, ngroups - kk0);
      const uint8_t* b = bbuf;
      const uint8_t* rb = rbuf;
      if (shared) {
        b = shared + kb * shared_stride();
        rb = b + rider_offset();
      } else {
        pack_block(pan, kb, xg, avail - gofs, bbuf);
        if (rider) pack_block(*rider, kb, xg, avail - gofs, rbuf);
      }
      Qu8GemmEpilogue e;
      e.first = kb == 0;
      e.last = kb == nkb_ - 1;
      e.qmin = rq_.qmin;
      e.qmax = rq_.qmax;
      e.zp_y = rq_.zp_y;
      e.res_scale = rq_.res_scale;
      e.res_zp = rq_.res_zp;
      e.ld_res = static_cast<size_t>(OHW_);
      for (int64_t mp = mp0; mp < mp1; ++mp) {
        const int64_t m = g * Mg_ + mp * mr_max, mr = std::min(mr_max, Mg_ - mp * mr_max);
        const size_t bi = block_index(g, mp, kb);
        const uint8_t* block = packed + ablock_[bi];
        const int64_t block_bytes = ablock_[bi + 1] - ablock_[bi];
        // One pixel task per image (stage 4's 7 x 7 = 48 + 1): the weights, 1-2.4 MB a conv, are
        // streamed once from DRAM, and the hardware prefetchers alone left that 20% slower than
        // from L3; pull the next channel panel's (they follow these, K-block-major) while this
        // tile computes. With several pixel tasks the weights are re-read from the caches, and
        // the same prefetches measured 5-25% slower: there the prefetchers keep up.
        if (prefetch_weights_ && !expanded) {
          const char* next = reinterpret_cast<const char*>(block + block_bytes);
          for (int64_t o = 0; o < block_bytes; o += 64) __builtin_prefetch(next + o, 0, 2);
        }
        const void* a = block;
        if (expanded) {
          a = expanded + eblock_[bi];
        } else if (expand_) {
          expand_(block, static_cast<size_t>(chunks_of(bi)), abuf);
          a = abuf;
        }
        e.row_init = row_init_.empty() ? nullptr : row_init_.data() + m;
        e.partial = partial + (mp - mp0) * mr_max * nr;
        e.scale = rq_.scale.data() + m;
        e.bias = rq_.bias.data() + m;
        e.res = res ? res + m * OHW_ + pan.p0 : nullptr;
        if (block_ > 0) {
          // A group: its int32 sums alone (first, not last), then folded into the float sums,
          // which start at the bias; the last group's epilogue runs from the floats.
          Qu8GemmEpilogue ge = e;
          ge.first = true;
          ge.last = false;
          ge.row_init = grow_init_.empty() ? nullptr : grow_init_.data() + kb * p_.M + m;
          table[mr](static_cast<size_t>(pan.nvalid), static_cast<size_t>(nkg), a, b, nullptr, 0, ge);
          float* fs = fsum + (mp - mp0) * mr_max * nr;
          if (kb == 0)
            for (int64_t r = 0; r < mr; ++r) std::fill(fs + r * nr, fs + (r + 1) * nr, rq_.bias[static_cast<size_t>(m + r)]);
          ks_.group_fma(ge.partial, gscale_.data() + kb * p_.M + m, static_cast<size_t>(mr), static_cast<size_t>(nr), fs);
          if (e.last)
            ks_.group_finish(fs, static_cast<size_t>(mr), static_cast<size_t>(nr), static_cast<size_t>(pan.nvalid),
                             y + m * OHW_ + pan.p0, static_cast<size_t>(OHW_), e);
          continue;
        }
        table[mr](static_cast<size_t>(pan.nvalid), static_cast<size_t>(nkg), a, b, y + m * OHW_ + pan.p0,
                  static_cast<size_t>(OHW_), e);
        if (!rider) continue;
        e.partial = rpartial + (mp - mp0) * kRiderWords;
        e.res = res ? res + m * OHW_ + rider->p0 : nullptr;
        rtable[mr](static_cast<size_t>(rider->nvalid), static_cast<size_t>(nkg), a, rb, y + m * OHW_ + rider->p0,
                   static_cast<size_t>(OHW_), e);
      }
    }
  }

  Conv2dParams p_;
  Qu8GemmKernels ks_;
  ops::Requant rq_;
  uint8_t zp_x_ = 0;
  int64_t Cg_ = 0, Mg_ = 0, K_ = 0, Kp_ = 0, OHW_ = 0, PH_ = 0, PW_ = 0;
  int64_t taps_ = 1;          // run lists per panel: KH x KW without a padded copy, else 1
  bool padded_copy_ = false;
  bool prefetch_weights_ = false;  // one pixel task per image: weights stream from memory once
  std::vector<int64_t> koff_;
  std::vector<int32_t> run_index_;
  std::vector<Panel> panels_;
  std::vector<Task> tasks_;
  std::vector<Qu8Im2colRun> runs_;
  int64_t nkb_ = 0, kgb_ = 0, mpanels_ = 0, bbytes_ = 0, rbytes_ = 0, partial_words_ = 0, scratch_floats_ = 0;
  // Weight blocks (int8 words, or packed sub-byte chunks when expand_ is set) and their offsets.
  Tensor packed_;
  int64_t padded_bytes_ = 0;
  // packed_'s layout (Kernel::prepacked): its parameters, then a hash of the weights they come from.
  std::string layout_key() const {
    char h[24];
    std::snprintf(h, sizeof h, " w=%016llx",
                  static_cast<unsigned long long>(content_hash(weights_.raw(), static_cast<size_t>(weights_.nbytes()))));
    return key_prefix_ + h;
  }
  std::string key_prefix_;
  Tensor weights_;       // the node's weights as given (shared, not copied): the key's hash
  bool stored_ = false;  // packed_ is a stored layout (the artifact's bytes, read in place)
  std::vector<int64_t> ablock_, eblock_;
  int64_t block_ = 0;                // group-wise weights: input channels per group (0: per channel)
  std::vector<float> gscale_;        // [K block = group][M]: s_x * s_w[m][group] / s_y
  std::vector<int32_t> grow_init_;   // [group][M]: (x_shift - zp_x) * the group's sum of w
  Qu8ExpandCodes expand_ = nullptr;
  bool expand_all_ = false;
  int wbits_ = 8;    // bits per code in packed_ when expand_ is set
  int reg_bits_ = 8;  // bits per code in the tiles' weight words (ks.weight_bits)
  int64_t abytes_ = 0;
  std::vector<int32_t> row_init_;
};


}  // namespace

// ---- applicability ----

namespace qops {

std::string need_dtype(const NodeContext& ctx, size_t i, const char* what, DType want) {
  if (!ctx.has_input(i)) return "";
  DType t = ctx.in(i).dtype;
  if (t == want) return "";
  return std::string(what) + " dtype " + dtype_name(t) + ", needs " + dtype_name(want);
}

std::string need_quant(const Value& v, const char* what, size_t channels) {
  if (!v.quant || v.quant->scale.empty()) return std::string(what) + " has no quantization parameters";
  const QuantParams& q = *v.quant;
  if (q.zero_point.size() != q.scale.size()) return std::string(what) + ": scale and zero_point counts differ";
  if (q.block_size > 0)
    return std::string(what) + " are group-wise (a scale per " + std::to_string(q.block_size) +
           " input channels and tap): the qbw rows take them";
  if (q.scale.size() != 1 && q.scale.size() != channels)
    return std::string(what) + " has " + std::to_string(q.scale.size()) + " scales, needs 1" +
           (channels > 1 ? " or " + std::to_string(channels) : std::string());
  for (float s : q.scale)
    if (!(s > 0.0f) || !std::isfinite(s)) return std::string(what) + " has a non-positive or non-finite scale";
  return "";
}

std::string need_weights(const NodeContext& ctx) {
  const DType t = ctx.in(1).dtype;
  if (t == DType::i8 || t == DType::i4 || t == DType::i2 || t == DType::b1) return "";
  return std::string("weights dtype ") + dtype_name(t) + ", needs i8, i4, i2 or b1";
}

}  // namespace qops

std::string check_qconv2d_u8_igemm(const NodeContext& ctx) {
  using qops::need_dtype;
  for (auto r : {need_dtype(ctx, 0, "input", DType::u8), qops::need_weights(ctx),
                 need_dtype(ctx, 2, "bias", DType::f32), need_dtype(ctx, 3, "residual", DType::u8),
                 ops::need_constant(ctx, 1, "weights"), ops::need_constant(ctx, 2, "bias"), ops::need_rank4(ctx)})
    if (!r.empty()) return r;
  if (ctx.out(0).dtype != DType::u8) return std::string("output dtype ") + dtype_name(ctx.out(0).dtype) + ", needs u8";
  const int64_t M = ctx.in(1).shape.empty() ? 0 : ctx.in(1).shape[0];
  for (auto r : {qops::need_quant(ctx.in(0), "input", 1), qops::need_quant(ctx.in(1), "weights", size_t(M)),
                 qops::need_quant(ctx.out(0), "output", 1),
                 ctx.has_input(3) ? qops::need_quant(ctx.in(3), "residual", 1) : std::string()})
    if (!r.empty()) return r;
  for (int32_t z : ctx.in(1).quant->zero_point)
    if (z != 0) return "weights zero point " + std::to_string(z) + ", needs symmetric (0)";
  return "";
}

std::string check_qconv2d_grouped_igemm(const NodeContext& ctx, int64_t kg) {
  const Value& wv = ctx.in(1);
  if (!wv.quant || wv.quant->block_size <= 0) return "weights are not group-wise (block_size 0)";
  // The igemm's own conditions with the weights' group-wise scales taken as they are.
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  const int64_t B = wv.quant->block_size, Cg = p.C_per_group();
  const WeightGroups wg = weight_groups({p.M, Cg, p.KH, p.KW}, B);
  if (static_cast<int64_t>(wv.quant->scale.size()) != wg.count())
    return "weights have " + std::to_string(wv.quant->scale.size()) + " scales; block size " + std::to_string(B) +
           " needs " + std::to_string(wg.count());
  for (float sc : wv.quant->scale)
    if (!(sc > 0.0f) || !std::isfinite(sc)) return "weights have a non-positive or non-finite scale";
  for (int32_t z : wv.quant->zero_point)
    if (z != 0) return "weights zero point " + std::to_string(z) + ", needs symmetric (0)";
  if (Cg % B != 0)
    return std::to_string(Cg) + " input channels per group are not a multiple of the block size " + std::to_string(B);
  if (B % kg != 0)
    return "block size " + std::to_string(B) + " is not a multiple of this kernel's k group (" + std::to_string(kg) + ")";
  using qops::need_dtype;
  for (auto r : {need_dtype(ctx, 0, "input", DType::u8), qops::need_weights(ctx), need_dtype(ctx, 2, "bias", DType::f32),
                 need_dtype(ctx, 3, "residual", DType::u8), ops::need_constant(ctx, 1, "weights"),
                 ops::need_constant(ctx, 2, "bias"), ops::need_rank4(ctx), qops::need_quant(ctx.in(0), "input", 1),
                 qops::need_quant(ctx.out(0), "output", 1),
                 ctx.has_input(3) ? qops::need_quant(ctx.in(3), "residual", 1) : std::string()})
    if (!r.empty()) return r;
  if (ctx.out(0).dtype != DType::u8) return std::string("output dtype ") + dtype_name(ctx.out(0).dtype) + ", needs u8";
  if (code_dtype(wv) == DType::b1) return "b1 weights take one scale per output channel";
  return "";
}

std::unique_ptr<Kernel> create_qconv2d_u8_igemm(const NodeContext& ctx, const Qu8GemmKernels& ks,
                                                bool packed_weights) {
  return std::make_unique<QConv2dIgemm>(ctx, conv2d_params(ctx.graph, ctx.node), ks, packed_weights);
}

namespace {
// Output-pixel lanes an image of `pixels` occupies in panels of nr (last panel: nr_tail wide when
// it fits, or narrow_max pixels and fewer on the channels-in-lanes kernel, about one lane each).
int64_t panel_lanes(int64_t pixels, int64_t nr, int64_t nr_tail, int64_t narrow_max) {
  const int64_t rem = pixels % nr;
  return pixels - rem + (rem == 0 ? 0 : rem <= narrow_max ? rem : rem <= nr_tail ? nr_tail : nr);
}
}  // namespace

namespace {
// "" when panels of nr pixels (nr_tail tails) fill about as many lanes as 16-wide ones, else why not.
std::string wide_panels_fill(const NodeContext& ctx, int64_t nr, int64_t nr_tail) {
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  const int64_t pixels = p.OH * p.OW;
  const double fill = double(pixels) / double(panel_lanes(pixels, nr, nr_tail, 4));
  const double fill16 = double(pixels) / double(panel_lanes(pixels, 16, 8, 4));
  if (fill + 0.03 < fill16)
    return std::to_string(p.OH) + "x" + std::to_string(p.OW) + " = " + std::to_string(pixels) + " pixels fill " +
           std::to_string(nr) + "-wide panels to " + std::to_string(int(fill * 100 + 0.5)) + "% (16-wide: " +
           std::to_string(int(fill16 * 100 + 0.5)) + "%)";
  return "";
}
}  // namespace

std::string check_qconv2d_u8_igemm_8x32(const NodeContext& ctx) {
  if (std::string r = check_qconv2d_u8_igemm(ctx); !r.empty()) return r;
  return wide_panels_fill(ctx, 32, 16);
}

std::string check_qconv2d_u8_igemm_8x48(const NodeContext& ctx) {
  if (std::string r = check_qconv2d_u8_igemm(ctx); !r.empty()) return r;
  return wide_panels_fill(ctx, 48, 16);
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_qconv2d_u8_igemm_avx2(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_avx2());
}

std::unique_ptr<Kernel> create_qconv2d_u8_igemm_avx512vnni(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_avx512vnni());
}

std::unique_ptr<Kernel> create_qconv2d_u8_igemm_avx512vnni_8x32(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_avx512vnni_8x32());
}

std::unique_ptr<Kernel> create_qconv2d_u8_igemm_avx512vnni_8x48(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_avx512vnni_8x48());
}

std::unique_ptr<Kernel> create_qconv2d_u8_igemm_avxvnni(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_avxvnni());
}
#endif  // __x86_64__

#if defined(__aarch64__)
std::unique_ptr<Kernel> create_qconv2d_u8_igemm_neon(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_neon());
}

std::unique_ptr<Kernel> create_qconv2d_u8_igemm_neondot(const NodeContext& ctx) {
  return create_qconv2d_u8_igemm(ctx, qu8_gemm_kernels_neondot());
}
#endif  // __aarch64__

}  // namespace lowbit
