// Exact integer Winograd F(2x2, 3x3) driver for the int8 3x3 stride-1 QConv on the AVX2 int16
// micro-kernels (kernels/qu8-winograd/README.md). The same structure as the fp32 Winograd driver
// (operators/conv2d_winograd_f32.cc): per inference the input transform (per channel pair, in
// parallel) fills V in the micro-kernels' widened B layout; then per (channel panel group, tile
// panel) 16 GEMMs leave raw int32 sums in thread scratch (the kernels' partial-sum mode), and the
// output transform divides by 4 and requantizes with the kernels' own epilogue. All integer: the
// bytes equal the reference's for any thread count.
#include <algorithm>
#include <cstring>
#include <vector>

#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/qu8-winograd/qu8_winograd.h"
#include "lowbit/operators/conv2d_f32.h"  // PackedWeights
#include "lowbit/operators/operator_util.h"
#include "lowbit/operators/qconv2d_u8.h"
#include "lowbit/operators/requant.h"
#include "lowbit/operators/winograd_plan.h"

namespace lowbit {
namespace {

using ops::ceil_div;

using winograd::kGroup;
using winograd::kXi;
using winograd::Panel;

// 4 * acc must fit int32 for the wrap-around sums to be exact: 4 * C * 9 * 255 * 128 < 2^31.
constexpr int64_t kMaxChannels = 1820;

// Two flavours share the driver (kernels/qu8-winograd/README.md):
//   int16: int8 codes on the AVX2 int16 kernels: U' and V in int16, channel pairs per k group;
//   u8x4:  narrow codes on the AVX-512 VNNI kernels: |U'| <= 9 |w| <= 126 and V + 64 in [4, 124]
//          fit vpdpbusd's s8 and u8, four channels per k group; the accumulators start at
//          -64 sum_c U'[xi] (row_init per xi), which removes the offset exactly.

#if defined(__x86_64__)
class QConvWinogradU8 final : public Kernel {
 public:
  // u8x4: the narrow-code flavour's kernels; nullptr: the int16 flavour on the AVX2 kernels.
  QConvWinogradU8(const NodeContext& ctx, const Conv2dParams& p, const Qu8WinogradU8x4Kernels* u8x4)
      : p_(p),
        u8x4_(u8x4 != nullptr),
        wk_(u8x4),
        ks_(u8x4 ? *u8x4->gemm : qu8_gemm_kernels_avx2()),
        rq_(ctx, p.M, 3),
        plan_(p, ks_.nr, ks_.nr_tail, ks_.mr) {
    const Tensor w_i8 = ops::weights_i8(ctx);  // sub-byte codes unpacked once
    const int8_t* w = w_i8.data<int8_t>();
    zp_x_ = static_cast<uint8_t>(ctx.in(0).quant->zero_point[0]);
    const int64_t kg = ks_.kg;  // channels per k group: 2 (int16 pairs) or 4 (u8 quads)
    ngroups_ = ceil_div(p.C, kg);
    nkb_ = ceil_div(kg * ngroups_, static_cast<int64_t>(ks_.kc_max));
    kgb_ = ceil_div(ngroups_, nkb_);
    // U': per channel panel, per xi, per k group g: mr words (U'[kg g + i] in field i: int16
    // halves or bytes). On 2 MB pages where granted (PackedWeights): U' is streamed from memory
    // every inference.
    packed_ = PackedWeights(kXi * p.M * ngroups_);
    uint32_t* pw = reinterpret_cast<uint32_t*>(packed_.data());
    if (u8x4_) row_init_.assign(static_cast<size_t>(kXi * p.M), 0);
    int16_t u[16];
    for (int64_t m = 0; m < p.M; ++m) {
      const int64_t mp = plan_.panel_of(m), m0 = plan_.panel_m0(mp), mr = plan_.panel_m0(mp + 1) - m0;
      for (int64_t c = 0; c < p.C; ++c) {
        qu8_winograd_weights_2x2_3x3(w + (m * p.C + c) * 9, u);
        for (int64_t xi = 0; xi < kXi; ++xi) {
          uint32_t& word = pw[m0 * kXi * ngroups_ + (xi * ngroups_ + c / kg) * mr + (m - m0)];
          if (u8x4_) {
            word |= static_cast<uint32_t>(static_cast<uint8_t>(u[xi])) << (8 * (c % 4));
            row_init_[static_cast<size_t>(xi * p.M + m)] -= 64 * u[xi];
          } else {
            word |= static_cast<uint32_t>(static_cast<uint16_t>(u[xi])) << (16 * (c % 2));
          }
        }
      }
    }
    u_in_l2_ = winograd::u_fits_l2(packed_.nbytes(), ctx.target.caches);
    half_ = ceil_div(plan_.TW + 1 + 16, 16) * 16;
    plane_bytes_ = ceil_div(plan_.PH * plan_.PW + 2 * half_ + 64, 64) * 64;
    // Per thread: kg channels' padded planes and their even/odd splits (int16), or a tile row of
    // V + 64 quads (u8x4), for the input transform.
    // u8x4: the image-order quads, every panel readable to its full width (and a row's vectors of
    // 16 tiles past the last tile).
    img_ld_ = ceil_div(std::max(plan_.T, plan_.tpad) + 32, 16) * 16 * 4;
    const int64_t input_bytes =
        kg * plane_bytes_ + (u8x4_ ? kXi * img_ld_ : kg * (2 * plan_.PH * half_ * 2)) + 64;
    const int64_t gemm_bytes = kGroup * kXi * ks_.mr * ks_.nr * 4;
    scratch_floats_ = ceil_div(std::max(input_bytes, gemm_bytes), 4) + 16;
    ops::per_thread_workspace(ctx.threads, scratch_floats_);  // warm it now, not in the first inference
  }

  int64_t packed_weight_bytes() const override {
    return packed_.nbytes() + static_cast<int64_t>((rq_.scale.size() + rq_.bias.size() + row_init_.size()) * 4);
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    float* const* scratch = ops::per_thread_workspace(pool.size(), scratch_floats_);
    // V: per xi, ngroups_ k groups of every tile panel, kg channels x (2 or 1) bytes per tile.
    uint8_t* const v = reinterpret_cast<uint8_t*>(ops::workspace(0, ceil_div(kXi * v_xi_bytes(), 4) + 16));
    const uint8_t* x = in[0].as<uint8_t>();
    const uint8_t* res = in.size() > 3 && in[3].data ? in[3].as<uint8_t>() : nullptr;
    uint8_t* y = out[0].as<uint8_t>();
    const int64_t OHW = p_.OH * p_.OW;
    for (int64_t n = 0; n < p_.N; ++n) {
      const uint8_t* xn = x + n * p_.C * p_.H * p_.W;
      pool.parallel_for(ngroups_, [&](int64_t g, int thread) {
        transform_group(v, g, xn, reinterpret_cast<uint8_t*>(scratch[thread]));
      });
      const uint8_t* rn = res ? res + n * p_.M * OHW : nullptr;
      uint8_t* yn = y + n * p_.M * OHW;
      plan_.run_gemm_tasks(pool, u_in_l2_,
                           [&](int64_t mpa, int64_t mpb, int64_t pi, bool first_pass, int thread) {
                             tile(v, mpa, mpb, pi, rn, yn, reinterpret_cast<int32_t*>(scratch[thread]), first_pass);
                           });
    }
  }

 private:
  // Pulls slice `step` of 16 of channel panel mp's U' into L2 (mp == mpanels: nothing).
  void prefetch_u(int64_t mp, int64_t step) const {
    if (mp >= plan_.mpanels) return;
    const uint32_t* a = reinterpret_cast<const uint32_t*>(packed_.data()) + plan_.panel_m0(mp) * kXi * ngroups_;
    winograd::prefetch_slice(reinterpret_cast<const char*>(a),
                             (plan_.panel_m0(mp + 1) - plan_.panel_m0(mp)) * kXi * ngroups_ * 4, step, kXi);
  }

  // Bytes per tile of a k group in V: 2 channels' int16 V, or 4 channels' u8 V + 64.
  static constexpr int64_t v_group_bytes() { return 4; }
  // Bytes between consecutive xi in V, a multiple of 64: the zmm tiles load their panels aligned
  // (panels start at multiples of 16 tiles, so within an xi they are).
  int64_t v_xi_bytes() const { return ceil_div(v_group_bytes() * ngroups_ * plan_.tpad, 64) * 64; }

  // B layout of xi, panel pan, k group g: the micro-kernels' panel (g rows of width x kg values).
  uint8_t* v_at(uint8_t* v, const Panel& pan, int64_t xi, int64_t g) const {
    const int64_t gb = v_group_bytes();
    return v + xi * v_xi_bytes() + pan.base * gb * ngroups_ + g * gb * pan.width;
  }

  // The input transform of k group g's channels (2 or 4) into V, for every tile panel.
  void transform_group(uint8_t* v, int64_t g, const uint8_t* x, uint8_t* scratch) const {
    const int64_t kg = ks_.kg;
    const int16_t* eo[4] = {nullptr, nullptr, nullptr, nullptr};
    const uint8_t* planes[4] = {nullptr, nullptr, nullptr, nullptr};
    int16_t* split = reinterpret_cast<int16_t*>(scratch + kg * plane_bytes_);
    for (int64_t i = 0; i < kg && kg * g + i < p_.C; ++i) {
      uint8_t* plane = scratch + i * plane_bytes_;
      const uint8_t* xc = x + (kg * g + i) * p_.H * p_.W;
      std::memset(plane, zp_x_, static_cast<size_t>(plane_bytes_));
      for (int64_t h = 0; h < p_.H; ++h)
        std::memcpy(plane + (h + p_.pad_top) * plan_.PW + p_.pad_left, xc + h * p_.W, static_cast<size_t>(p_.W));
      planes[i] = plane;
      if (u8x4_) continue;  // transformed from the planes, a tile row at a time (below)
      int16_t* e = split + i * 2 * plan_.PH * half_;
      qu8_winograd_split__avx2(plane, static_cast<size_t>(plan_.PW), static_cast<size_t>(plan_.PH), static_cast<size_t>(half_),
                               zp_x_, e);
      eo[i] = e;
    }
    const int64_t ld = v_xi_bytes();
    if (u8x4_) {
      // Every tile row's V + 64 quads into an image-order buffer (tile t at 4 t), then each panel's
      // run of tiles (consecutive in image order) into its place: one vector per panel and xi.
      uint8_t* img = scratch + kg * plane_bytes_;
      for (int64_t th = 0; th < plan_.TH; ++th)
        wk_->input(planes, static_cast<size_t>(plan_.PW), zp_x_,
                                                    static_cast<size_t>(th), static_cast<size_t>(plan_.TW),
                                                    img + 4 * th * plan_.TW, static_cast<size_t>(img_ld_));
      for (const Panel& pan : plan_.panels) {
        uint8_t* dst = v_at(v, pan, 0, g);
        const uint8_t* src = img + 4 * pan.t0;
        for (int64_t xi = 0; xi < kXi; ++xi)
          std::memcpy(dst + xi * ld, src + xi * img_ld_, static_cast<size_t>(4 * pan.width));
      }
      return;
    }
    for (const Panel& pan : plan_.panels)
      qu8_winograd_input_2x2_3x3__avx2(eo[0], eo[1], static_cast<size_t>(half_), plan_.segs.data() + pan.seg_begin,
                                       static_cast<size_t>(pan.seg_end - pan.seg_begin),
                                       static_cast<size_t>(pan.width), reinterpret_cast<int16_t*>(v_at(v, pan, 0, g)),
                                       static_cast<size_t>(ld / 2));
  }

  void tile(uint8_t* v, int64_t mpa, int64_t mpb, int64_t pi, const uint8_t* res, uint8_t* y, int32_t* s, bool first_pass) const {
    const Panel& pan = plan_.panels[static_cast<size_t>(pi)];
    const int64_t w = pan.width, slot = kXi * ks_.mr * w;
    // A tail panel of a few tiles (14 x 14 maps: 7 x 7 = 3 x 16 + 1 tiles) runs channels in lanes:
    // one vpmaddwd per tile and k pair instead of MR on an 8-wide tile with 1 lane in use (10% of
    // a stage-3 conv's time for 2% of its tiles). Its sums come pixel-major (narrow kernels'
    // e.partial: tile j in words j * 8 + r) and are moved to the row-major slot after the K blocks.
    const bool narrow = w == ks_.nr_tail && pan.nvalid <= ks_.narrow_max;
    const Qu8GemmUkernel* uks = narrow ? ks_.narrow : w == ks_.nr ? ks_.main : ks_.tail;
    // The narrow kernels' sums: tile j's rows in the lanes of one vector (ymm: 8, zmm: 16).
    const int64_t lane_stride = u8x4_ ? 16 : 8;
    alignas(64) int32_t lanes[Qu8GemmKernels::kMaxMR * 16];
    const uint32_t* packed = reinterpret_cast<const uint32_t*>(packed_.data());
    Qu8GemmEpilogue e;
    e.last = false;  // raw int32 sums into e.partial
    // Per channel panel its 16 xi in a row: U' is read as one sequential stream per panel, and on
    // the group's first tile panel the next channel panel's U' is pulled in meanwhile.
    for (int64_t mp = mpa; mp < mpb; ++mp) {
      const int64_t m0 = plan_.panel_m0(mp), mr = plan_.panel_m0(mp + 1) - m0;
      for (int64_t xi = 0; xi < kXi; ++xi) {
        if (first_pass) prefetch_u(mp + 1, xi);
        int32_t* sums = s + (mp - mpa) * slot + xi * mr * w;
        e.partial = narrow ? lanes : sums;
        e.row_init = row_init_.empty() ? nullptr : row_init_.data() + xi * p_.M + m0;
        for (int64_t kb = 0; kb < nkb_; ++kb) {
          const int64_t g0 = kb * kgb_, nkg = std::min(kgb_, ngroups_ - g0);
          e.first = kb == 0;
          uks[mr](static_cast<size_t>(pan.nvalid), static_cast<size_t>(nkg),
                  packed + m0 * kXi * ngroups_ + (xi * ngroups_ + g0) * mr, v_at(v, pan, xi, g0), nullptr, 0, e);
        }
        if (narrow)
          for (int64_t j = 0; j < pan.nvalid; ++j)
            for (int64_t r = 0; r < mr; ++r) sums[r * w + j] = lanes[j * lane_stride + r];
      }
    }
    const int64_t OHW = p_.OH * p_.OW;
    Qu8GemmEpilogue q;
    q.qmin = rq_.qmin;
    q.qmax = rq_.qmax;
    q.zp_y = rq_.zp_y;
    q.res_scale = rq_.res_scale;
    q.res_zp = rq_.res_zp;
    for (int64_t mp = mpa; mp < mpb; ++mp) {
      const int64_t m0 = plan_.panel_m0(mp), mr = plan_.panel_m0(mp + 1) - m0;
      for (int64_t r = 0; r < mr; ++r) {
        const int64_t m = m0 + r;
        q.scale = rq_.scale.data() + m;
        q.bias = rq_.bias.data() + m;
        q.res = res ? res + m * OHW : nullptr;
        (u8x4_ ? wk_->output : qu8_winograd_output_2x2_3x3__avx2)(
                                          s + (mp - mpa) * slot + r * w, static_cast<size_t>(mr * w),
                                          static_cast<size_t>(w), plan_.segs.data() + pan.seg_begin,
                                          static_cast<size_t>(pan.seg_end - pan.seg_begin), q, y + m * OHW,
                                          static_cast<size_t>(p_.OH), static_cast<size_t>(p_.OW));
      }
    }
  }

  Conv2dParams p_;
  bool u8x4_;
  const Qu8WinogradU8x4Kernels* wk_;
  const Qu8GemmKernels& ks_;
  ops::Requant rq_;
  uint8_t zp_x_ = 0;
  winograd::Plan plan_;
  int64_t ngroups_ = 0, nkb_ = 0, kgb_ = 0, half_ = 0, plane_bytes_ = 0, scratch_floats_ = 0;
  bool u_in_l2_ = false;  // U' stays in L2 across a task's tile panels: tile panels walk outermost
  PackedWeights packed_;
  std::vector<int32_t> row_init_;  // u8x4: -64 sum_c U'[m][c][xi] at [xi * M + m]
  int64_t img_ld_ = 0;  // u8x4: bytes per xi of the image-order V + 64 buffer
};
#endif  // __x86_64__

}  // namespace

std::string check_qconv2d_u8_winograd(const NodeContext& ctx) {
  if (std::string r = check_qconv2d_u8_igemm(ctx); !r.empty()) return r;
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  if (std::string r = winograd::applies(p); !r.empty()) return r;
  if (p.C > kMaxChannels)
    return std::to_string(p.C) + " input channels, at most " + std::to_string(kMaxChannels) +
           " keep 4x the int32 accumulator exact";
  return "";
}

std::string check_qconv2d_qsub_winograd_vnni(const NodeContext& ctx) {
  if (std::string r = check_qconv2d_u8_igemm(ctx); !r.empty()) return r;
  // V + 64 must fit u8 (|V| <= 4 qmax_x <= 64) and U' s8 (|U'| <= 9 max |w| <= 127).
  const CodeRange x = code_range(ctx.in(0)), w = code_range(ctx.in(1));
  const int64_t wmax = std::max<int64_t>(-int64_t{w.lo}, w.hi);
  if (x.hi > 15)
    return "input codes " + std::string(dtype_name(code_dtype(ctx.in(0)))) +
           " up to " + std::to_string(x.hi) + ": V = B^T (x - zp) B needs |x - zp| <= 15 to fit u8 with its offset";
  if (9 * wmax > 127)
    return "weight codes " + std::string(dtype_name(code_dtype(ctx.in(1)))) + ": U' = G' w G'^T reaches 9 * " +
           std::to_string(wmax) + ", beyond int8";
  return winograd::applies(conv2d_params(ctx.graph, ctx.node));
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_qconv2d_u8_winograd_avx2(const NodeContext& ctx) {
  return std::make_unique<QConvWinogradU8>(ctx, conv2d_params(ctx.graph, ctx.node), nullptr);
}

std::unique_ptr<Kernel> create_qconv2d_qsub_winograd(const NodeContext& ctx, const Qu8WinogradU8x4Kernels& k) {
  return std::make_unique<QConvWinogradU8>(ctx, conv2d_params(ctx.graph, ctx.node), &k);
}

std::unique_ptr<Kernel> create_qconv2d_qsub_winograd_avx512vnni(const NodeContext& ctx) {
  return create_qconv2d_qsub_winograd(ctx, qu8_winograd_u8x4_avx512vnni());
}
#endif

}  // namespace lowbit
