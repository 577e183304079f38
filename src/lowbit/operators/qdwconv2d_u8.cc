// Depthwise QConv driver over the flat polyphase kernels (kernels/qu8-dwconv/README.md): the plan
// and the weight words are made once at creation; a task is one channel plane, which the kernel
// turns into its phases, word plane and output in per-thread scratch. Every output byte is a
// function of integers only, so results are identical for any ISA and thread count.
#include <algorithm>
#include <cstring>

#include "lowbit/ir/op_params.h"
#include "lowbit/operators/operator_util.h"
#include "lowbit/operators/qconv2d_u8.h"
#include "lowbit/operators/requant.h"

namespace lowbit {
namespace {

Qu8DwPlan plan_for(const Conv2dParams& p, uint8_t zp_x, size_t G) {
  auto z = [](int64_t v) { return static_cast<size_t>(v); };
  return qu8_dw_plan(z(p.H), z(p.W), z(p.KH), z(p.KW), z(p.SH), z(p.SW), z(p.pad_top), z(p.pad_left), z(p.OH),
                     z(p.OW), zp_x, G);
}

class QDwConv2d final : public Kernel {
 public:
  QDwConv2d(const NodeContext& ctx, const Conv2dParams& p, const Qu8DwKernel& k) : p_(p), k_(k), rq_(ctx, p.M, 3) {
    const Tensor w_i8 = ops::weights_i8(ctx);  // sub-byte codes unpacked once
    const int8_t* w = w_i8.data<int8_t>();
    const uint8_t zp_x = static_cast<uint8_t>(ctx.in(0).quant->zero_point[0]);
    plan_ = plan_for(p, zp_x, k.G);
    const size_t taps = static_cast<size_t>(p.KH * p.KW), ng = plan_.ngroups;
    words_.assign(static_cast<size_t>(p.C) * ng, 0);
    init_.assign(static_cast<size_t>(p.C), 0);
    for (int64_t c = 0; c < p.C; ++c) {
      const int8_t* wc = w + static_cast<size_t>(c) * taps;
      qu8_dw_pack_weights(plan_, static_cast<size_t>(p.KH), static_cast<size_t>(p.KW), wc, k.widened,
                          words_.data() + static_cast<size_t>(c) * ng);
      if (!k.widened) {  // the dot-product kernels multiply x - x_shift: add back (x_shift - zp_x) * sum(w)
        int32_t sum = 0;
        for (size_t t = 0; t < taps; ++t) sum += wc[t];
        init_[static_cast<size_t>(c)] = (k.x_shift - int32_t{zp_x}) * sum;
      }
    }
    scratch_floats_ = static_cast<int64_t>((plan_.scratch_bytes() + 63) / 4 + 16);
    ops::per_thread_workspace(ctx.threads, scratch_floats_);  // warm it now, not in the first inference
    // Planes per task: about 8K outputs each, so MobileNetV2's 960 planes of 7 x 7 do not pay a task each.
    ppt_ = ops::planes_per_task(p.OH * p.OW, 8 << 10);
  }

  int64_t packed_weight_bytes() const override {
    return static_cast<int64_t>(words_.size() * 4 + init_.size() * 4 + rq_.scale.size() * 8);
  }

  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool& pool) const override {
    float* const* slots = ops::per_thread_workspace(pool.size(), scratch_floats_);
    const uint8_t* x = in[0].as<uint8_t>();
    const uint8_t* res = in.size() > 3 && in[3].data ? in[3].as<uint8_t>() : nullptr;
    uint8_t* y = out[0].as<uint8_t>();
    const int64_t HW = p_.H * p_.W, OHW = p_.OH * p_.OW;
    const size_t ng = plan_.ngroups;
    const int64_t planes = p_.N * p_.C;
    pool.parallel_for(ops::ceil_div(planes, ppt_), [&](int64_t t, int thread) {
      // 64-byte aligned inside the slot (a Tensor's data is at least 16-byte aligned).
      auto* slot = reinterpret_cast<uint8_t*>(slots[thread]);
      void* scratch = slot + ((64 - reinterpret_cast<uintptr_t>(slot) % 64) % 64);
      for (int64_t nc = t * ppt_; nc < std::min(planes, (t + 1) * ppt_); ++nc) {
        const size_t c = static_cast<size_t>(nc % p_.C);
        Qu8GemmEpilogue e;
        e.scale = rq_.scale.data() + c;
        e.bias = rq_.bias.data() + c;
        e.res = res ? res + nc * OHW : nullptr;
        e.ld_res = static_cast<size_t>(p_.OW);
        e.res_scale = rq_.res_scale;
        e.res_zp = rq_.res_zp;
        e.qmin = rq_.qmin;
        e.qmax = rq_.qmax;
        e.zp_y = rq_.zp_y;
        k_.plane(x + nc * HW, plan_, words_.data() + c * ng, init_[c], y + nc * OHW, e, scratch);
      }
    });
  }

 private:
  Conv2dParams p_;
  const Qu8DwKernel& k_;
  ops::Requant rq_;
  Qu8DwPlan plan_;
  std::vector<int32_t> words_, init_;
  int64_t scratch_floats_ = 0, ppt_ = 1;
};

}  // namespace

std::string check_qconv2d_u8_dwconv(const NodeContext& ctx) {
  if (std::string r = check_qconv2d_u8_igemm(ctx); !r.empty()) return r;
  const Conv2dParams p = conv2d_params(ctx.graph, ctx.node);
  if (!p.is_depthwise())
    return "group " + std::to_string(p.group) + " is not depthwise (C=" + std::to_string(p.C) +
           ", M=" + std::to_string(p.M) + ")";
  if (p.DH != 1 || p.DW != 1)
    return "dilation " + std::to_string(p.DH) + "x" + std::to_string(p.DW) +
           ", needs 1 (the flat phases put a kernel row's taps at consecutive values)";
  // G = 2 groups the most taps (the 4-tap kernels need fewer): the same limit for every row.
  if (plan_for(p, 0, 2).ngroups == 0)
    return "kernel " + std::to_string(p.KH) + "x" + std::to_string(p.KW) + " stride " + std::to_string(p.SW) +
           " has more than " + std::to_string(Qu8DwPlan::kMaxGroups) + " tap pairs";
  return "";
}

std::unique_ptr<Kernel> create_qconv2d_u8_dwconv(const NodeContext& ctx, const Qu8DwKernel& k) {
  return std::make_unique<QDwConv2d>(ctx, conv2d_params(ctx.graph, ctx.node), k);
}

#if defined(__x86_64__)
std::unique_ptr<Kernel> create_qconv2d_u8_dwconv_avx2(const NodeContext& ctx) {
  return create_qconv2d_u8_dwconv(ctx, qu8_dwconv_avx2());
}
std::unique_ptr<Kernel> create_qconv2d_u8_dwconv_avxvnni(const NodeContext& ctx) {
  return create_qconv2d_u8_dwconv(ctx, qu8_dwconv_avxvnni());
}
std::unique_ptr<Kernel> create_qconv2d_u8_dwconv_avx512vnni(const NodeContext& ctx) {
  return create_qconv2d_u8_dwconv(ctx, qu8_dwconv_avx512vnni());
}
#endif
#if defined(__aarch64__)
std::unique_ptr<Kernel> create_qconv2d_u8_dwconv_neon(const NodeContext& ctx) {
  return create_qconv2d_u8_dwconv(ctx, qu8_dwconv_neon());
}
std::unique_ptr<Kernel> create_qconv2d_u8_dwconv_neondot(const NodeContext& ctx) {
  return create_qconv2d_u8_dwconv(ctx, qu8_dwconv_neondot());
}
#endif

}  // namespace lowbit
