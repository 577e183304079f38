// Exact integer Winograd F(2x2, 3x3) driver for the int8 3x3 stride-1 QConv on the AVX2 int16
// micro-kernels (kernels/qu8-winograd/README.md). The same structure as the fp32 Winograd driver
// (operators/conv2d_winograd_f32.cc): per inference the input transform (per channel pair, in
// parallel) fills V in the micro-kernels' widened B layout; then per (channel panel group, tile
// panel) 16 GEMMs leave raw int32 sums in thread scratch (the kernels' partial-sum mode), and the
// output transform divides by 4 and requantizes with the kernels' own epilogue. All integer: the
// bytes equal the reference's for any thread count.
#include <algorithm>
#include <cstring>

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

#if defined(__x86_64__)
class QConvWinogradU8 final : public Kernel {
 public:
  QConvWinogradU8(const NodeContext& ctx, const Conv2dParams& p)
      : p_(p), ks_(qu8_gemm_kernels_avx2()), rq_(ctx, p.M, 3), plan_(p, ks_.nr, ks_.nr_tail, ks_.mr) {
    const Tensor w_i8 = ops::weights_i8(ctx);  // sub-byte codes unpacked once
    const int8_t* w = w_i8.data<int8_t>();
    zp_x_ = static_cast<uint8_t>(ctx.in(0).quant->zero_point[0]);
    ngroups_ = ceil_div(p.C, 2);
    nkb_ = ceil_div(2 * ngroups_, static_cast<int64_t>(ks_.kc_max));
    kgb_ = ceil_div(ngroups_, nkb_);
    // U': per channel panel, per xi, per k pair g: mr words (U'[2g] low, U'[2g + 1] high).
    // On 2 MB pages where granted (PackedWeights): U' is streamed from memory every inference.
    packed_ = PackedWeights(kXi * p.M * ngroups_);
    uint32_t* pw = reinterpret_cast<uint32_t*>(packed_.data());
    int16_t u[16];
    for (int64_t m = 0; m < p.M; ++m) {
      const int64_t mp = plan_.panel_of(m), m0 = plan_.panel_m0(mp), mr = plan_.panel_m0(mp + 1) - m0;
      for (int64_t c = 0; c < p.C; ++c) {
        qu8_winograd_weights_2x2_3x3(w + (m * p.C + c) * 9, u);
        for (int64_t xi = 0; xi < kXi; ++xi)
          pw[m0 * kXi * ngroups_ + (xi * ngroups_ + c / 2) * mr + (m - m0)] |=
              static_cast<uint32_t>(static_cast<uint16_t>(u[xi])) << (16 * (c % 2));
      }
    }
    u_bytes_ = packed_.nbytes();
    half_ = ceil_div(plan_.TW + 1 + 16, 16) * 16;
    plane_bytes_ = ceil_div(plan_.PH * plan_.PW + 2 * half_ + 64, 64) * 64;
    const int64_t input_bytes = 2 * plane_bytes_ + 2 * (2 * plan_.PH * half_ * 2) + 64;
    const int64_t gemm_bytes = kGroup * kXi * ks_.mr * ks_.nr * 4;
    scratch_floats_ = ceil_div(std::max(input_bytes, gemm_bytes), 4) + 16;
    scratch_.reserve(std::max(ctx.threads, 1), scratch_floats_);
  }

  int64_t packed_weight_bytes() const override {
    return packed_.nbytes() + static_cast<int64_t>((rq_.scale.size() + rq_.bias.size()) * 4);
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) override {
    const int threads = pool.size();
    scratch_.reserve(threads, scratch_floats_);
    v_ = reinterpret_cast<int16_t*>(ops::workspace(0, ceil_div(kXi * 2 * ngroups_ * plan_.tpad, 2) + 16));
    const uint8_t* x = in[0].as<uint8_t>();
    const uint8_t* res = in.size() > 3 && in[3].data ? in[3].as<uint8_t>() : nullptr;
    uint8_t* y = out[0].as<uint8_t>();
    const int64_t OHW = p_.OH * p_.OW;
    for (int64_t n = 0; n < p_.N; ++n) {
      const uint8_t* xn = x + n * p_.C * p_.H * p_.W;
      pool.parallel_for(ngroups_, [&](int64_t g, int thread) {
        transform_pair(g, xn, reinterpret_cast<uint8_t*>(scratch_.get(thread)));
      });
      const uint8_t* rn = res ? res + n * p_.M * OHW : nullptr;
      uint8_t* yn = y + n * p_.M * OHW;
      plan_.run_gemm_tasks(pool, u_bytes_ <= winograd::kUInL2Bytes,
                           [&](int64_t mpa, int64_t mpb, int64_t pi, bool first_pass, int thread) {
                             tile(mpa, mpb, pi, rn, yn, reinterpret_cast<int32_t*>(scratch_.get(thread)), first_pass);
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

  // B layout of xi, panel pan, k pair g: the micro-kernels' widened panel (g rows of width x 2).
  int16_t* v_at(const Panel& pan, int64_t xi, int64_t g) const {
    return v_ + xi * 2 * ngroups_ * plan_.tpad + pan.base * 2 * ngroups_ + g * 2 * pan.width;
  }

  void transform_pair(int64_t g, const uint8_t* x, uint8_t* scratch) const {
    const int16_t* eo[2] = {nullptr, nullptr};
    int16_t* split = reinterpret_cast<int16_t*>(scratch + 2 * plane_bytes_);
    for (int i = 0; i < 2 && 2 * g + i < p_.C; ++i) {
      uint8_t* plane = scratch + i * plane_bytes_;
      const uint8_t* xc = x + (2 * g + i) * p_.H * p_.W;
      std::memset(plane, zp_x_, static_cast<size_t>(plane_bytes_));
      for (int64_t h = 0; h < p_.H; ++h)
        std::memcpy(plane + (h + p_.pad_top) * plan_.PW + p_.pad_left, xc + h * p_.W, static_cast<size_t>(p_.W));
      int16_t* e = split + i * 2 * plan_.PH * half_;
      qu8_winograd_split__avx2(plane, static_cast<size_t>(plan_.PW), static_cast<size_t>(plan_.PH), static_cast<size_t>(half_),
                               zp_x_, e);
      eo[i] = e;
    }
    const int64_t ld = 2 * ngroups_ * plan_.tpad;
    for (const Panel& pan : plan_.panels)
      qu8_winograd_input_2x2_3x3__avx2(eo[0], eo[1], static_cast<size_t>(half_), plan_.segs.data() + pan.seg_begin,
                                       static_cast<size_t>(pan.seg_end - pan.seg_begin),
                                       static_cast<size_t>(pan.width), v_at(pan, 0, g), static_cast<size_t>(ld));
  }

  void tile(int64_t mpa, int64_t mpb, int64_t pi, const uint8_t* res, uint8_t* y, int32_t* s, bool first_pass) const {
    const Panel& pan = plan_.panels[static_cast<size_t>(pi)];
    const int64_t w = pan.width, slot = kXi * ks_.mr * w;
    // A tail panel of a few tiles (14 x 14 maps: 7 x 7 = 3 x 16 + 1 tiles) runs channels in lanes:
    // one vpmaddwd per tile and k pair instead of MR on an 8-wide tile with 1 lane in use (10% of
    // a stage-3 conv's time for 2% of its tiles). Its sums come pixel-major (narrow kernels'
    // e.partial: tile j in words j * 8 + r) and are moved to the row-major slot after the K blocks.
    const bool narrow = w == ks_.nr_tail && pan.nvalid <= ks_.narrow_max;
    const Qu8GemmUkernel* uks = narrow ? ks_.narrow : w == ks_.nr ? ks_.main : ks_.tail;
    alignas(64) int32_t lanes[Qu8GemmKernels::kMaxMR * 8];
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
        for (int64_t kb = 0; kb < nkb_; ++kb) {
          const int64_t g0 = kb * kgb_, nkg = std::min(kgb_, ngroups_ - g0);
          e.first = kb == 0;
          uks[mr](static_cast<size_t>(pan.nvalid), static_cast<size_t>(nkg),
                  packed + m0 * kXi * ngroups_ + (xi * ngroups_ + g0) * mr, v_at(pan, xi, g0), nullptr, 0, e);
        }
        if (narrow)
          for (int64_t j = 0; j < pan.nvalid; ++j)
            for (int64_t r = 0; r < mr; ++r) sums[r * w + j] = lanes[j * 8 + r];
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
        qu8_winograd_output_2x2_3x3__avx2(s + (mp - mpa) * slot + r * w, static_cast<size_t>(mr * w),
                                          static_cast<size_t>(w), plan_.segs.data() + pan.seg_begin,
                                          static_cast<size_t>(pan.seg_end - pan.seg_begin), q, y + m * OHW,
                                          static_cast<size_t>(p_.OH), static_cast<size_t>(p_.OW));
      }
    }
  }

  Conv2dParams p_;
  const Qu8GemmKernels& ks_;
  ops::Requant rq_;
  uint8_t zp_x_ = 0;
  winograd::Plan plan_;
  int64_t ngroups_ = 0, nkb_ = 0, kgb_ = 0, u_bytes_ = 0, half_ = 0, plane_bytes_ = 0, scratch_floats_ = 0;
  PackedWeights packed_;
  int16_t* v_ = nullptr;
  ops::ThreadScratch scratch_;
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

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_qconv2d_u8_winograd_avx2(const NodeContext& ctx) {
  return std::make_unique<QConvWinogradU8>(ctx, conv2d_params(ctx.graph, ctx.node));
}
#endif

}  // namespace lowbit
