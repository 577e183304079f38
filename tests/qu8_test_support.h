#pragma once
// Shared by tests/qu8_kernels_test.cc and tests/simde (the SIMDe-emulated VNNI kernels): builds
// QConv graphs with chosen geometry, zero points and value patterns, runs the reference kernel and
// a fast kernel at 1 and 2 threads, and compares the bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "lowbit/ir/codes.h"
#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/operators/qconv2d_u8.h"
#include "lowbit/target/target.h"

namespace lowbit::qu8test {

enum class Fill { random, extreme_max, extreme_min, mix };

struct ConvCase {
  int64_t N = 1, C = 8, H = 7, W = 7, M = 8, KH = 3, KW = 3, SH = 1, SW = 1, DH = 1, DW = 1, group = 1;
  std::vector<int64_t> pads = {1, 1, 1, 1};
  bool bias = true, residual = false;
  float act_min = -INFINITY, act_max = INFINITY;
  int32_t zp_x = 128, zp_y = 100, zp_r = 90;
  bool per_channel = true;
  Fill fill = Fill::random;
  uint32_t seed = 1;

  std::string str() const {
    std::ostringstream o;  // (operator+ chains trip GCC 12's -Wrestrict false positive at -O3)
    o << "N" << N << " C" << C << " " << H << "x" << W << " M" << M << " k" << KH << "x" << KW << " s" << SH << "x"
      << SW << " d" << DH << "x" << DW << " g" << group << " pads " << pads[0] << "," << pads[1] << "," << pads[2]
      << "," << pads[3] << (bias ? " bias" : "") << (residual ? " res" : "") << (std::isfinite(act_min) ? " min" : "")
      << (std::isfinite(act_max) ? " max" : "") << " zpx" << zp_x << " zpy" << zp_y << " fill" << static_cast<int>(fill)
      << " seed" << seed;
    return o.str();
  }
};

struct Built {
  Graph g;
  NodeId node = 0;
  std::vector<Tensor> inputs;  // x, W, B (maybe empty), residual (maybe empty)
};

inline Built build_qconv(const ConvCase& c) {
  Built b;
  Graph& g = b.g;
  std::mt19937 rng(c.seed);
  const int64_t Cg = c.C / c.group, K = Cg * c.KH * c.KW;

  Tensor x(DType::u8, {c.N, c.C, c.H, c.W});
  Tensor w(DType::i8, {c.M, Cg, c.KH, c.KW});
  for (int64_t i = 0; i < x.numel(); ++i) {
    uint8_t v = static_cast<uint8_t>(rng());
    if (c.fill == Fill::extreme_max || c.fill == Fill::extreme_min) v = 255;
    if (c.fill == Fill::mix) v = rng() & 1 ? 255 : 0;
    x.data<uint8_t>()[i] = v;
  }
  for (int64_t i = 0; i < w.numel(); ++i) {
    int8_t v = static_cast<int8_t>(rng());
    if (c.fill == Fill::extreme_min) v = -128;
    if (c.fill == Fill::extreme_max) v = 127;
    if (c.fill == Fill::mix) v = rng() & 1 ? 127 : -128;
    w.data<int8_t>()[i] = v;
  }
  // Scales put typical outputs inside the u8 range (extremes saturate some, which is tested too).
  const float s_x = 0.02f;
  const double typical = c.fill == Fill::random ? std::sqrt(double(K)) * 74.0 * 128.0 / 1.7 : double(K) * 255.0 * 128.0;
  QuantParams qw;
  qw.axis = 0;
  for (int64_t m = 0; m < (c.per_channel ? c.M : 1); ++m) {
    qw.scale.push_back(0.01f * (1.0f + 0.37f * static_cast<float>(m % 5)));
    qw.zero_point.push_back(0);
  }
  const float s_y = static_cast<float>(s_x * 0.01 * typical / 100.0);

  ValueId vx = g.add_value("x", DType::u8, x.shape(), true);
  g.value(vx).quant = QuantParams{{s_x}, {c.zp_x}, -1};
  ValueId vw = g.add_constant("w", w);
  g.value(vw).quant = qw;
  std::vector<ValueId> ins = {vx, vw, kNoValue};
  b.inputs = {x, w, Tensor(), Tensor()};
  if (c.bias) {
    Tensor bt(DType::f32, {c.M});
    std::uniform_real_distribution<float> d(-60.0f * s_y, 60.0f * s_y);
    for (int64_t m = 0; m < c.M; ++m) bt.data<float>()[m] = d(rng);
    ins[2] = g.add_constant("b", bt);
    b.inputs[2] = bt;
  }
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{c.KH, c.KW});
  a.set("strides", std::vector<int64_t>{c.SH, c.SW});
  a.set("dilations", std::vector<int64_t>{c.DH, c.DW});
  a.set("pads", c.pads);
  a.set("group", c.group);
  if (std::isfinite(c.act_min)) a.set("act_min", c.act_min);
  if (std::isfinite(c.act_max)) a.set("act_max", c.act_max);
  const AxisGeometry gh = resolve_axis("NOTSET", c.H, c.KH, c.SH, c.DH, c.pads[0], c.pads[2], false);
  const AxisGeometry gw = resolve_axis("NOTSET", c.W, c.KW, c.SW, c.DW, c.pads[1], c.pads[3], false);
  const Shape ys = {c.N, c.M, gh.out, gw.out};
  if (c.residual) {
    Tensor r(DType::u8, ys);
    for (int64_t i = 0; i < r.numel(); ++i) r.data<uint8_t>()[i] = c.fill == Fill::random ? static_cast<uint8_t>(rng()) : 255;
    ValueId vr = g.add_value("r", DType::u8, ys, true);
    g.value(vr).quant = QuantParams{{s_y * 0.8f}, {c.zp_r}, -1};
    ins.push_back(vr);
    b.inputs[3] = r;
  }
  ValueId vy = g.add_value("y", DType::u8, ys, true);
  g.value(vy).quant = QuantParams{{s_y}, {c.zp_y}, -1};
  b.node = g.add_node("QConv", "qconv", ins, {vy}, a);
  return b;
}

inline std::vector<TensorView> views(const std::vector<Tensor>& ts, size_t n) {
  std::vector<TensorView> v;
  for (size_t i = 0; i < n; ++i) v.push_back(ts[i].empty() ? TensorView{} : ts[i].view());
  return v;
}

inline Tensor run_reference(const Built& b) {
  const Node& n = b.g.nodes[static_cast<size_t>(b.node)];
  const Value& yv = b.g.value(n.outputs[0]);
  Tensor y(DType::u8, yv.shape);
  std::vector<TensorView> out = {y.view()};
  std::vector<TensorView> in = views(b.inputs, n.inputs.size());
  find_reference("QConv")(b.g, n, in, out);
  return y;
}

// Compares the fast kernel made by `create` with the reference at 1 and 2 threads.
template <class Create>
void expect_conv_exact(const ConvCase& c, Create create) {
  Built b = build_qconv(c);
  const Node& n = b.g.nodes[static_cast<size_t>(b.node)];
  Target t;
  NodeContext ctx{b.g, n, t, 2};
  ASSERT_EQ(check_qconv2d_u8_igemm(ctx), "") << c.str();
  const Tensor ref = run_reference(b);
  std::unique_ptr<Kernel> k = create(ctx);
  std::vector<TensorView> in = views(b.inputs, n.inputs.size());
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    for (int rep = 0; rep < 2; ++rep) {  // a second run reuses scratch and the padded buffer
      Tensor y(DType::u8, ref.shape());
      std::memset(y.data<uint8_t>(), 0xA5, static_cast<size_t>(y.numel()));
      std::vector<TensorView> out = {y.view()};
      k->run(in, out, pool);
      int64_t bad = 0, first = -1;
      for (int64_t i = 0; i < y.numel(); ++i)
        if (y.data<uint8_t>()[i] != ref.data<uint8_t>()[i]) {
          if (first < 0) first = i;
          ++bad;
        }
      ASSERT_EQ(bad, 0) << c.str() << " threads " << threads << ": first mismatch at " << first << " got "
                        << int(y.data<uint8_t>()[first]) << " want " << int(ref.data<uint8_t>()[first]);
    }
  }
}

// Turns an int8 QConv case into one with `wcode` weights (stored packed, or as i8 when !packed)
// and `acode` input and output activation codes.
inline void to_subbyte(Built& b, DType wcode, DType acode, bool packed, uint32_t seed) {
  Graph& g = b.g;
  Node& n = g.nodes[static_cast<size_t>(b.node)];
  std::mt19937 rng(seed);
  const DTypeInfo& wd = dtype_info(wcode);
  const DTypeInfo& ad = dtype_info(acode);
  Value& wv = g.value(n.inputs[1]);
  Tensor w(packed ? wcode : DType::i8, wv.shape);
  for (int64_t i = 0; i < w.numel(); ++i) {
    const int64_t span = wd.qmax - wd.qmin + 1;
    // Extremes a quarter of the time each: qmin * qmin products are the largest.
    const uint32_t r = rng() % 4;
    int64_t v = r == 0 ? wd.qmin : r == 1 ? wd.qmax : wd.qmin + int64_t(rng() % uint32_t(span));
    if (wcode == DType::b1 && v == 0) v = rng() % 2 ? 1 : -1;  // b1 codes are +-1
    store_code(w.raw(), w.dtype(), i, static_cast<int32_t>(v));
  }
  wv.dtype = w.dtype();
  wv.constant = w;
  wv.quant->code = wcode;
  wv.quant->narrow = false;
  b.inputs[1] = w;
  // Input codes in [0, qmax], zero points inside the code range.
  Value& xv = g.value(n.inputs[0]);
  for (int64_t i = 0; i < b.inputs[0].numel(); ++i)
    b.inputs[0].data<uint8_t>()[i] = static_cast<uint8_t>(rng() % uint32_t(ad.qmax + 1));
  xv.quant->zero_point[0] = std::min<int32_t>(xv.quant->zero_point[0], int32_t(ad.qmax));
  if (acode != DType::u8) xv.quant->code = acode;
  Value& yv = g.value(n.outputs[0]);
  yv.quant->zero_point[0] = std::min<int32_t>(yv.quant->zero_point[0], int32_t(ad.qmax) / 2);
  yv.quant->scale[0] *= 255.0f / float(ad.qmax);  // keep outputs spread over the narrower range
  if (acode != DType::u8) yv.quant->code = acode;
}


// Gives the case's weights group-wise scales (QuantParams::block_size): a scale per `block` input
// channels of each output channel and tap, spread over a factor of 4 so that groups differ.
inline void to_grouped(Built& b, int64_t block, uint32_t seed) {
  Value& wv = b.g.value(b.g.nodes[static_cast<size_t>(b.node)].inputs[1]);
  std::mt19937 rng(seed);
  const WeightGroups wg = weight_groups(wv.shape, block);
  const float base = wv.quant->scale[0];
  wv.quant->block_size = block;
  wv.quant->scale.resize(static_cast<size_t>(wg.count()));
  for (float& s : wv.quant->scale) s = base * (0.5f + 1.5f * static_cast<float>(rng() % 1000) / 1000.0f);
  wv.quant->zero_point.assign(wv.quant->scale.size(), 0);
}

// Group-wise cases: input channels that blocks of 16 and 32 divide, 1x1 / 3x3 (padded and not),
// strides 1 and 2, channel tails (M = 13, 19), a 7 x 7 map (a last panel of 1 pixel), residual,
// clamps, zero points 0 / 255.
inline std::vector<ConvCase> grouped_cases() {
  std::vector<ConvCase> v;
  uint32_t seed = 900;
  for (int64_t C : {32, 64})
    for (int64_t k : {1, 3})
      for (int64_t s : {1, 2}) {
        ConvCase c;
        c.C = C, c.M = C == 32 ? 13 : 19, c.H = 9, c.W = 11, c.KH = c.KW = k, c.SH = c.SW = s;
        c.pads = k == 3 && s == 1 ? std::vector<int64_t>{1, 1, 1, 1} : std::vector<int64_t>{0, 0, 0, 0};
        c.zp_x = s == 1 ? 0 : 255;
        c.residual = k == 3 && s == 1;
        c.act_min = 0.0f;
        c.seed = seed++;
        v.push_back(c);
      }
  ConvCase c;  // 7 x 7: 48 + 1 pixels; several groups per tap
  c.C = 64, c.M = 24, c.H = c.W = 7, c.seed = seed++, c.act_max = 2.0f;
  v.push_back(c);
  return v;
}

// expect_conv_exact on `wcode` weight codes (packed) and `acode` activation codes: for the rows
// that read sub-byte weights packed (tests/subbyte_test.cc iterates the table; tests/simde runs the
// VNNI ones where the host lacks VNNI).
template <class Create>
void expect_subbyte_conv_exact(const ConvCase& c, DType wcode, DType acode, Create create) {
  Built b = build_qconv(c);
  to_subbyte(b, wcode, acode, /*packed=*/true, c.seed + 77);
  const Node& n = b.g.nodes[static_cast<size_t>(b.node)];
  Target t;
  NodeContext ctx{b.g, n, t, 2};
  const Tensor ref = run_reference(b);
  std::unique_ptr<Kernel> k = create(ctx);
  std::vector<TensorView> in = views(b.inputs, n.inputs.size());
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    Tensor y(DType::u8, ref.shape());
    std::vector<TensorView> out = {y.view()};
    k->run(in, out, pool);
    ASSERT_EQ(std::memcmp(y.raw(), ref.raw(), static_cast<size_t>(y.nbytes())), 0)
        << c.str() << " " << dtype_name(wcode) << "/" << dtype_name(acode) << " threads " << threads;
  }
}

// The Winograd F(2x2, 3x3) sweep (3x3 stride 1): odd sizes (a last tile half outside the image),
// channel counts that leave a partial last k group, asymmetric pads, zero points 0 / 128 / 255,
// all-extreme inputs and weights, last panels of 1-3 tiles (the channels-in-lanes kernel), several
// K blocks, residual and clamps, batch 2, up to the int16 flavour's channel bound.
inline std::vector<ConvCase> winograd_cases() {
  std::vector<ConvCase> cases;
  uint32_t seed = 300;
  int i = 0;
  for (auto pads : std::vector<std::vector<int64_t>>{{1, 1, 1, 1}, {0, 0, 0, 0}, {0, 1, 2, 1}, {2, 0, 1, 2}})
    for (int64_t C : {8, 9, 33}) {
      ConvCase c;
      c.C = C, c.M = 7 + C % 5, c.H = 15, c.W = 14, c.pads = pads, c.seed = seed++;
      c.zp_x = std::array<int32_t, 3>{0, 128, 255}[i % 3];
      c.residual = i % 2 == 1;
      c.act_min = i % 3 == 0 ? 0.0f : -INFINITY;
      c.act_max = i % 4 == 0 ? 1.5f : INFINITY;
      c.bias = i % 5 != 2;
      c.per_channel = i % 7 != 3;
      ++i;
      cases.push_back(c);
    }
  for (Fill f : {Fill::extreme_min, Fill::extreme_max, Fill::mix})
    for (int32_t zp : {0, 255}) {
      ConvCase c;
      c.fill = f, c.zp_x = zp, c.C = 64, c.M = 13, c.H = c.W = 12, c.residual = f == Fill::mix;
      c.seed = seed++;
      cases.push_back(c);
    }
  // Tile counts that leave a last panel of 1-3 tiles (the channels-in-lanes kernel): 7 x 7 = 49,
  // 5 x 7 = 35, 2 x 17 = 34 tiles.
  for (auto [h, w] : {std::pair<int64_t, int64_t>{14, 14}, {10, 14}, {4, 34}}) {
    ConvCase c;
    c.C = 41, c.M = 17, c.H = h, c.W = w, c.residual = h == 10, c.seed = seed++;
    cases.push_back(c);
  }
  ConvCase big;  // 3 K blocks, 4 channel panels per group and more
  big.C = 1100, big.M = 40, big.H = 12, big.W = 11, big.fill = Fill::extreme_min, big.zp_x = 0;
  cases.push_back(big);
  big.C = 1820, big.M = 3, big.H = big.W = 12, big.fill = Fill::extreme_max, big.zp_x = 255;  // the bound
  cases.push_back(big);
  ConvCase rn;  // a ResNet layer, batch 2
  rn.N = 2, rn.C = 64, rn.M = 64, rn.H = rn.W = 28, rn.residual = true, rn.act_min = 0.0f, rn.seed = seed++;
  cases.push_back(rn);
  return cases;
}

// The depthwise sweep every depthwise row runs (tests/qu8_kernels_test.cc, tests/simde, NEON under
// qemu): 3x3 and 5x5 at stride 1 and 2 with symmetric and TF-style pads, channel counts 1-32,
// planes from 1 pixel to 33 (the flat layout's row boundaries and its last partial vector), zero
// points 0 / 128 / 255, residual, clamps, extremes, batch 2; then stride 3 and 4, rectangular and
// 1x1 kernels, a 7x7, pads wider than the kernel reach and a map narrower than the kernel.
inline std::vector<ConvCase> depthwise_cases() {
  std::vector<ConvCase> v;
  uint32_t seed = 100;
  int count = 0;
  auto add = [&](ConvCase c) {
    c.M = c.group = c.C;
    c.seed = seed++;
    c.zp_x = std::array<int32_t, 3>{0, 128, 255}[count % 3];
    c.residual = count % 4 == 1;
    c.act_min = count % 3 == 0 ? 0.0f : -INFINITY;
    c.act_max = count % 5 == 0 ? 1.0f : INFINITY;
    c.bias = count % 2 == 0;
    c.fill = count % 7 == 3 ? Fill::extreme_min : count % 7 == 5 ? Fill::mix : count % 7 == 6 ? Fill::extreme_max
                                                                                               : Fill::random;
    c.N = count % 6 == 2 ? 2 : 1;
    ++count;
    v.push_back(c);
  };
  for (int64_t C : {1, 3, 17, 32})
    for (int64_t k : {3, 5})
      for (int64_t s : {1, 2})
        for (int64_t hw : {1, 7, 17, 33}) {
          ConvCase c;
          c.C = C;
          c.H = hw;
          c.W = hw + 2;
          c.KH = c.KW = k;
          c.SH = c.SW = s;
          c.pads = {k / 2, k / 2, k / 2, k / 2};
          if (s == 2) c.pads = {0, 0, k / 2, k / 2};  // TF-style asymmetric
          if (hw < k - c.pads[0] - c.pads[2]) continue;
          add(c);
        }
  ConvCase c;  // rectangular kernel, stride 3 x 2, uneven pads
  c.C = 5, c.H = 19, c.W = 23, c.KH = 3, c.KW = 2, c.SH = 3, c.SW = 2, c.pads = {2, 1, 0, 3};
  add(c);
  c.SW = 3;  // stride 3 both ways: phases narrower than the kernel
  add(c);
  c.KH = 1, c.KW = 1, c.SH = c.SW = 2, c.pads = {0, 0, 0, 0};  // 1x1 depthwise, stride 2
  add(c);
  c.KH = c.KW = 7, c.SH = c.SW = 1, c.pads = {3, 3, 3, 3}, c.H = 9, c.W = 12, c.C = 6;  // 7x7
  add(c);
  c.KH = c.KW = 3, c.pads = {4, 2, 5, 3}, c.H = 4, c.W = 5, c.C = 3;  // pads beyond the kernel reach
  add(c);
  c.KH = c.KW = 5, c.pads = {2, 2, 2, 2}, c.H = 3, c.W = 2, c.SH = c.SW = 2;  // map smaller than the kernel
  add(c);
  c.C = 40, c.H = c.W = 56, c.KH = c.KW = 3, c.SH = c.SW = 2, c.pads = {0, 0, 1, 1};  // a MobileNet layer
  add(c);
  c.C = 8, c.H = c.W = 16, c.SH = c.SW = 4, c.pads = {1, 1, 1, 1};  // stride 4 (4-tap words must not step by 4)
  add(c);
  c.KH = c.KW = 4, c.pads = {0, 0, 0, 0};  // 4x4 / 4, patchify-style
  add(c);
  c.KH = 5, c.KW = 3, c.SH = 1, c.SW = 4, c.pads = {2, 1, 2, 0}, c.H = 9, c.W = 21;  // stride 1 x 4
  add(c);
  return v;
}

// Every depthwise QConv row (`candidates`, e.g. candidates_for("QConv") filtered by name) that this
// build has and this CPU runs, on the whole sweep; returns how many rows ran.
template <class Rows>
int expect_every_depthwise_row_exact(const Rows& rows) {
  int ran = 0;
  for (const auto* kc : rows) {
    if (!kc->create || kc->name.find("dwconv2d") == std::string::npos) continue;
    bool runs = true;
    for (Feature f : kc->features) runs = runs && host_target().has(f);
    if (!runs) {
      std::printf("  %s: not run on this CPU (AVX-512 and AVX-VNNI through SIMDe, NEON under qemu)\n",
                  kc->name.c_str());
      continue;
    }
    for (const ConvCase& c : depthwise_cases()) {
      Built b = build_qconv(c);
      NodeContext ctx{b.g, b.g.nodes[0], host_target(), 2};
      if (c.C > 1) {  // C = 1 is group 1: not depthwise to the check, a plane all the same to the kernel
        EXPECT_EQ(kc->check(ctx), "") << kc->name << " " << c.str();
      }
      expect_conv_exact(c, kc->create);
    }
    ++ran;
  }
  return ran;
}

// The case list every kernel family runs: odd channel counts, strides, pads, kernel sizes, groups,
// tiny spatial sizes, optional bias / residual / clamp, zero points 0 / 128 / 255, extremes.
inline std::vector<ConvCase> conv_cases(bool big) {
  std::vector<ConvCase> v;
  uint32_t seed = 1;
  auto add = [&](ConvCase c) {
    c.seed = seed++;
    v.push_back(c);
  };
  for (int64_t C : {1, 3, 5, 17, 33})
    for (int64_t M : {1, 5, 7, 13, 17, 33}) {
      ConvCase c;
      c.C = C;
      c.M = M;
      c.H = 5 + C % 4;
      c.W = 6 + M % 5;
      add(c);
    }
  for (int64_t k : {1, 3, 7})
    for (int64_t s : {1, 2})
      for (int32_t zp : {0, 128, 255}) {
        ConvCase c;
        c.C = 17;
        c.M = 19;
        c.H = 13;
        c.W = 11;
        c.KH = c.KW = k;
        c.SH = c.SW = s;
        c.pads = {k / 2, k / 2, k / 2, k / 2};
        c.zp_x = zp;
        c.zp_y = 255 - zp;
        c.bias = zp != 128;
        add(c);
      }
  {
    ConvCase c;  // asymmetric pads, rectangular kernel and strides
    c.C = 6, c.M = 9, c.H = 10, c.W = 23, c.KH = 2, c.KW = 3, c.SH = 1, c.SW = 2, c.pads = {0, 2, 1, 0};
    add(c);
    c.SH = 3, c.SW = 1, c.pads = {2, 0, 0, 1};
    add(c);
    c.DH = 2, c.DW = 3, c.SH = 1, c.pads = {1, 3, 2, 0};  // dilation
    add(c);
  }
  for (int64_t g : {2, 3}) {
    ConvCase c;  // grouped
    c.group = g;
    c.C = 6 * g;
    c.M = 5 * g;
    add(c);
  }
  {
    ConvCase c;  // depthwise 3x3 stride 1 and 2
    c.C = c.M = c.group = 24;
    c.H = 15, c.W = 17;
    add(c);
    c.SH = c.SW = 2;
    c.pads = {0, 0, 1, 1};
    add(c);
  }
  for (int64_t hw : {1, 2, 3}) {
    ConvCase c;  // tiny spatial
    c.H = c.W = hw;
    c.C = 9;
    c.M = 11;
    c.KH = c.KW = hw == 1 ? 1 : 3;
    c.pads = hw == 1 ? std::vector<int64_t>{0, 0, 0, 0} : std::vector<int64_t>{1, 1, 1, 1};
    add(c);
  }
  for (int variant = 0; variant < 6; ++variant) {
    ConvCase c;  // epilogue variants: residual, clamps, per-tensor weights, batch
    c.C = 20, c.M = 14, c.H = 9, c.W = 9;
    c.residual = variant % 2 == 0;
    c.act_min = variant >= 2 ? 0.0f : -INFINITY;
    c.act_max = variant >= 4 ? 1.5f : INFINITY;
    c.per_channel = variant != 3;
    c.N = variant == 5 ? 2 : 1;
    c.bias = variant != 1;
    c.zp_y = variant == 4 ? 0 : 37;
    add(c);
  }
  // Maps that end in a narrow panel of 1-4 pixels after 16- and 32-wide ones (7x7 = 3x16 + 1 =
  // 32 + 16 + 1, 18, 35, 20), with enough k groups for several K blocks and an odd remainder of
  // the narrow kernels' unrolled k loop.
  for (auto [h, w] : {std::pair<int64_t, int64_t>{7, 7}, {3, 6}, {5, 7}, {4, 5}}) {
    ConvCase c;
    c.C = big ? 131 : 37;
    c.M = 21;
    c.H = h, c.W = w;
    c.residual = h % 2 == 1;
    add(c);
  }
  // Extremes: all 255 x all -128 (and x 127), random mixes of 0/255 and -128/127; K = 4608+.
  for (Fill f : {Fill::extreme_min, Fill::extreme_max, Fill::mix})
    for (int32_t zp : {0, 255}) {
      ConvCase c;
      c.fill = f;
      c.zp_x = zp;
      c.C = big ? 512 : 64;
      c.M = 13;
      c.H = c.W = 5;
      c.residual = f == Fill::mix;
      add(c);
    }
  if (big) {
    ConvCase c;  // K = 9216 (several K blocks) and wide M
    c.fill = Fill::extreme_min;
    c.zp_x = 0;
    c.C = 1024;
    c.M = 20;
    c.H = c.W = 4;
    add(c);
    c.fill = Fill::mix;
    add(c);
    c.fill = Fill::random;
    c.C = 300, c.M = 70, c.H = 14, c.W = 14, c.zp_x = 3;
    add(c);
  }
  return v;
}

}  // namespace lowbit::qu8test
