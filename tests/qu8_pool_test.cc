// u8 pooling kernels (kernels/qu8-pool, operators/pool2d_u8) against the reference kernels, byte
// for byte, over odd shapes, strides, pads, dilations and ceil_mode; plus the reference's own u8
// GlobalAveragePool rounding and the dispatch rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <sstream>

#include "lowbit/dispatch/registry.h"
#include "lowbit/ir/op_params.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/operators/pool2d_u8.h"
#include "lowbit/target/target.h"

namespace lowbit {
namespace {

enum class Fill { random, zeros, max, sparse };

struct PoolCase {
  int64_t N = 1, C = 3, H = 7, W = 7, KH = 3, KW = 3, SH = 1, SW = 1, DH = 1, DW = 1;
  std::vector<int64_t> pads = {0, 0, 0, 0};
  bool ceil_mode = false;
  Fill fill = Fill::random;
  uint32_t seed = 1;

  std::string str() const {
    std::ostringstream o;
    o << "N" << N << " C" << C << " " << H << "x" << W << " k" << KH << "x" << KW << " s" << SH << "x" << SW << " d"
      << DH << "x" << DW << " pads " << pads[0] << "," << pads[1] << "," << pads[2] << "," << pads[3]
      << (ceil_mode ? " ceil" : "") << " fill" << static_cast<int>(fill);
    return o.str();
  }
};

struct Built {
  Graph g;
  Tensor x;
};

Tensor make_input(const Shape& s, Fill fill, uint32_t seed) {
  Tensor x(DType::u8, s);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < x.numel(); ++i) {
    uint8_t v = static_cast<uint8_t>(rng());
    if (fill == Fill::zeros) v = 0;
    if (fill == Fill::max) v = 255;
    if (fill == Fill::sparse) v = rng() % 7 == 0 ? static_cast<uint8_t>(rng() % 3) : 0;
    x.data<uint8_t>()[i] = v;
  }
  return x;
}

// One u8 pooling node x -> y; y keeps x's quantization (notes/quant_ir.md).
Built build(const std::string& op, const Shape& xs, const Attributes& a, Fill fill, uint32_t seed) {
  Built b;
  b.x = make_input(xs, fill, seed);
  ValueId vx = b.g.add_value("x", DType::u8, xs, true);
  b.g.value(vx).quant = QuantParams{{0.05f}, {17}, -1};
  ValueId vy = b.g.add_value("y", DType::u8, {}, true);
  b.g.value(vy).quant = QuantParams{{0.05f}, {17}, -1};
  b.g.add_node(op, "pool", {vx}, {vy}, a);
  if (op == "MaxPool" || op == "AveragePool") {
    const Pool2dParams p = pool2d_params(b.g, b.g.nodes[0]);
    b.g.value(vy).shape = {p.N, p.C, p.OH, p.OW};
  } else {
    b.g.value(vy).shape = {xs[0], xs[1], 1, 1};
  }
  return b;
}

// MaxPool, or AveragePool (count_include_pad as given), of the case's geometry.
Built build_pool(const std::string& op, const PoolCase& c, bool include_pad = false) {
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{c.KH, c.KW});
  a.set("strides", std::vector<int64_t>{c.SH, c.SW});
  a.set("dilations", std::vector<int64_t>{c.DH, c.DW});
  a.set("pads", c.pads);
  a.set("ceil_mode", int64_t{c.ceil_mode});
  if (op == "AveragePool") a.set("count_include_pad", int64_t{include_pad});
  return build(op, {c.N, c.C, c.H, c.W}, a, c.fill, c.seed);
}
Built build_maxpool(const PoolCase& c) { return build_pool("MaxPool", c); }
Built build_avgpool(const PoolCase& c, bool include_pad) { return build_pool("AveragePool", c, include_pad); }

// GlobalAveragePool's output parameters, against the input's 0.05 / 17: the same, a narrower range
// (as calibration gives a mean), a wider one, zero points at both ends, u4 codes in u8 storage.
struct OutQuant {
  float scale;
  int32_t zp;
  std::optional<DType> code;
  std::string str() const {
    return std::to_string(scale) + "/" + std::to_string(zp) + (code ? std::string(" ") + dtype_name(*code) : "");
  }
  void apply(Graph& g) const { g.value(g.nodes[0].outputs[0]).quant = QuantParams{{scale}, {zp}, -1, code}; }
};
std::vector<OutQuant> gap_out_quants() {
  return {{0.05f, 17, std::nullopt}, {0.05f / 7, 0, std::nullopt},  {0.05f / 36, 128, std::nullopt},
          {0.15f, 255, std::nullopt}, {0.05f / 3, 2, DType::u4}};
}

Tensor run_reference(const Built& b) {
  const Node& n = b.g.nodes[0];
  Tensor y(DType::u8, b.g.value(n.outputs[0]).shape);
  std::vector<TensorView> in = {b.x.view()}, out = {y.view()};
  find_reference(n.op)(b.g, n, in, out);
  return y;
}

template <class Create>
void expect_exact(const Built& b, Create create, const std::string& what) {
  const Node& n = b.g.nodes[0];
  const Tensor ref = run_reference(b);
  Target t = parse_target("x86-64+avx2+fma");
  NodeContext ctx{b.g, n, t, 3};
  std::unique_ptr<Kernel> k = create(ctx);
  std::vector<TensorView> in = {b.x.view()};
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    for (int rep = 0; rep < 2; ++rep) {  // a second run reuses the padded scratch planes
      Tensor y(DType::u8, ref.shape());
      std::memset(y.data<uint8_t>(), 0xA5, static_cast<size_t>(y.numel()));
      std::vector<TensorView> out = {y.view()};
      k->run(in, out, pool);
      for (int64_t i = 0; i < y.numel(); ++i)
        ASSERT_EQ(int(y.data<uint8_t>()[i]), int(ref.data<uint8_t>()[i]))
            << what << " threads " << threads << " at " << i;
    }
  }
}

// The build's u8 pooling kernels: AVX2 (the tests skip on x86 hosts without it) or NEON.
#if defined(__x86_64__)
void skip_without_simd() {
  if (!host_target().has(Feature::avx2) || !host_target().has(Feature::fma)) GTEST_SKIP() << "host lacks AVX2";
}
std::unique_ptr<Kernel> create_maxpool(const NodeContext& ctx) { return create_maxpool2d_u8_avx2(ctx); }
std::unique_ptr<Kernel> create_global_avgpool(const NodeContext& ctx) { return create_global_avgpool_u8_avx2(ctx); }
std::unique_ptr<Kernel> create_avgpool(const NodeContext& ctx) { return create_avgpool2d_u8_avx2(ctx); }
#else
void skip_without_simd() {}
std::unique_ptr<Kernel> create_maxpool(const NodeContext& ctx) { return create_maxpool2d_u8_neon(ctx); }
std::unique_ptr<Kernel> create_global_avgpool(const NodeContext& ctx) { return create_global_avgpool_u8_neon(ctx); }
std::unique_ptr<Kernel> create_avgpool(const NodeContext& ctx) { return create_avgpool2d_u8_neon(ctx); }
#endif

std::vector<PoolCase> maxpool_cases() {
  std::vector<PoolCase> v;
  uint32_t seed = 1;
  auto add = [&](PoolCase c) {
    c.seed = seed++;
    v.push_back(c);
  };
  for (int64_t k : {1, 2, 3, 5})
    for (int64_t s : {1, 2, 3})
      for (int64_t hw : {1, 6, 13, 40, 71}) {
        if (k > hw + 2 * (k / 2)) continue;
        PoolCase c;
        c.C = 3;
        c.H = hw;
        c.W = hw + 3;
        c.KH = c.KW = k;
        c.SH = c.SW = s;
        const int64_t p = (k - 1) / 2;
        c.pads = {p, p, k - 1 - p, p};
        add(c);
      }
  {
    PoolCase c;  // ResNet stem: 3x3 s2 pad 1 on 112x112 (odd 113 too)
    c.C = 5, c.H = c.W = 112, c.SH = c.SW = 2, c.pads = {1, 1, 1, 1};
    add(c);
    c.H = 113, c.W = 111;
    add(c);
    c.ceil_mode = true;
    add(c);
    c.H = 27, c.W = 27, c.pads = {0, 0, 0, 0};  // SqueezeNet's: no pads, ceil_mode, a 27-byte row's tail
    add(c);
  }
  {
    PoolCase c;  // rectangular kernel, mixed strides, asymmetric pads, dilation, ceil_mode
    c.N = 2, c.C = 3, c.H = 17, c.W = 45, c.KH = 2, c.KW = 3, c.SH = 1, c.SW = 2, c.pads = {0, 2, 1, 0};
    add(c);
    c.SH = 3, c.SW = 1, c.pads = {1, 0, 0, 1}, c.ceil_mode = true;
    add(c);
    c.DH = 2, c.DW = 3, c.SH = 2, c.SW = 3, c.pads = {1, 3, 2, 0}, c.ceil_mode = false;
    add(c);
    c.ceil_mode = true;
    add(c);
    c.KH = 1, c.KW = 7, c.SH = 1, c.SW = 4, c.DH = 1, c.DW = 2, c.pads = {0, 5, 0, 6};
    add(c);
  }
  for (Fill f : {Fill::zeros, Fill::max, Fill::sparse}) {
    PoolCase c;  // padding must never win, whatever the data
    c.H = 9, c.W = 37, c.SH = c.SW = 2, c.pads = {1, 1, 1, 1}, c.fill = f;
    add(c);
  }
  return v;
}

TEST(Qu8Pool, MaxPoolMatchesReference) {
  skip_without_simd();
  for (const PoolCase& c : maxpool_cases()) {
    Built b = build_maxpool(c);
    Target t = parse_target("x86-64+avx2+fma");
    ASSERT_EQ(check_maxpool2d_u8(NodeContext{b.g, b.g.nodes[0], t, 1}), "") << c.str();
    expect_exact(b, create_maxpool, c.str());
  }
}

// The same shapes as MaxPool (pads, ceil_mode overhang, dilation), with and without
// count_include_pad; padded taps stand for the zero point 17.
TEST(Qu8Pool, AveragePoolMatchesReference) {
  skip_without_simd();
  std::vector<PoolCase> cases = maxpool_cases();
  PoolCase c;  // Bi-Real / ResNet-D shortcut pools: 2x2 / 2 on even and odd maps
  c.C = 5, c.KH = c.KW = 2, c.SH = c.SW = 2;
  for (int64_t hw : {14, 15, 56}) c.H = c.W = hw, cases.push_back(c);
  c.ceil_mode = true, c.H = c.W = 15;
  cases.push_back(c);
  for (const PoolCase& pc : cases)
    for (bool include : {false, true}) {
      Built b = build_avgpool(pc, include);
      Target t = parse_target("x86-64+avx2+fma");
      ASSERT_EQ(check_avgpool2d_u8(NodeContext{b.g, b.g.nodes[0], t, 1}), "") << pc.str();
      expect_exact(b, create_avgpool, pc.str() + (include ? " include_pad" : ""));
    }
}

// The u8 reference against the fp32 reference on the dequantized input: the code mean is the real
// mean (same scale), so the result is within half a step of it.
TEST(Qu8Pool, AveragePoolReferenceAgreesWithFloat) {
  for (const PoolCase& pc : maxpool_cases())
    for (bool include : {false, true}) {
      Built b = build_avgpool(pc, include);
      const Tensor q = run_reference(b);
      Graph gf = b.g;
      gf.value(gf.nodes[0].inputs[0]).dtype = DType::f32;
      gf.value(gf.nodes[0].inputs[0]).quant.reset();
      gf.value(gf.nodes[0].outputs[0]).dtype = DType::f32;
      gf.value(gf.nodes[0].outputs[0]).quant.reset();
      Tensor xf(DType::f32, b.x.shape()), yf(DType::f32, q.shape());
      for (int64_t i = 0; i < xf.numel(); ++i) xf.data<float>()[i] = 0.05f * (float(b.x.data<uint8_t>()[i]) - 17.0f);
      std::vector<TensorView> in = {xf.view()}, out = {yf.view()};
      find_reference("AveragePool")(gf, gf.nodes[0], in, out);
      for (int64_t i = 0; i < q.numel(); ++i) {
        const float real = 0.05f * (float(q.data<uint8_t>()[i]) - 17.0f);
        ASSERT_NEAR(real, yf.data<float>()[i], 0.025f + 1e-5f) << pc.str() << (include ? " include_pad" : "") << " at " << i;
      }
    }
}

TEST(Qu8Pool, AveragePoolByHand) {
  // 2x2 input (codes, zp 17), 2x2 window, stride 1, pads 1 all round: 3x3 outputs.
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2});
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  for (bool include : {false, true}) {
    a.set("count_include_pad", int64_t{include});
    Built b = build("AveragePool", {1, 1, 2, 2}, a, Fill::zeros, 1);
    const uint8_t xs[4] = {10, 20, 30, 41};
    std::memcpy(b.x.data<uint8_t>(), xs, 4);
    const Tensor y = run_reference(b);
    // Corner windows hold one pixel, edges two, the centre four. With include_pad every window
    // counts 4 taps, the padded ones code 17: top-left (10 + 3 * 17) / 4 = 15.25 -> 15, top
    // (10 + 20 + 34) / 4 = 16, left (10 + 30 + 34) / 4 = 18.5 -> 18 (half to even), centre
    // 101 / 4 = 25.25 -> 25. Without, the mean of the pixels inside: right (20 + 41) / 2 = 30.5
    // -> 30, bottom (30 + 41) / 2 = 35.5 -> 36.
    const std::vector<int> want = include ? std::vector<int>{15, 16, 18, 18, 25, 24, 20, 26, 23}
                                          : std::vector<int>{10, 15, 20, 20, 25, 30, 30, 36, 41};
    EXPECT_EQ(std::vector<int>(y.data<uint8_t>(), y.data<uint8_t>() + 9), want) << include;
#if defined(__x86_64__)
    if (!host_target().has(Feature::avx2)) continue;
#endif
    expect_exact(b, create_avgpool, "by hand");
  }
}

TEST(Qu8Pool, GlobalAveragePoolMatchesReference) {
  skip_without_simd();
  uint32_t seed = 100;
  for (Shape s : std::vector<Shape>{{1, 1, 1, 1},
                                    {1, 3, 1, 2},
                                    {2, 5, 3, 5},
                                    {1, 7, 7, 7},
                                    {1, 65, 4, 4},
                                    {1, 3, 17, 19},
                                    {1, 2, 1, 100},
                                    {1, 130, 7, 7},
                                    {1, 4, 56, 56},
                                    {1, 2, 130, 131}})
    for (Fill f : {Fill::random, Fill::max, Fill::zeros, Fill::sparse})
      for (const OutQuant& oq : gap_out_quants()) {
        Built b = build("GlobalAveragePool", s, {}, f, seed++);
        oq.apply(b.g);
        Target t = parse_target("x86-64+avx2+fma");
        ASSERT_EQ(check_global_avgpool_u8(NodeContext{b.g, b.g.nodes[0], t, 1}), "") << shape_str(s);
        expect_exact(b, create_global_avgpool,
                     shape_str(s) + " fill " + std::to_string(static_cast<int>(f)) + " out " + oq.str());
      }
}

// The u8 reference against the fp32 mean of the dequantized input, requantized: within half an
// output step (plus the clamp to the output's codes).
TEST(Qu8Pool, GlobalAveragePoolReferenceIsTheRealMeanRequantized) {
  uint32_t seed = 300;
  for (Shape s : std::vector<Shape>{{1, 3, 1, 2}, {1, 7, 7, 7}, {1, 4, 56, 56}})
    for (Fill f : {Fill::random, Fill::sparse, Fill::max})
      for (const OutQuant& oq : gap_out_quants()) {
        Built b = build("GlobalAveragePool", s, {}, f, seed++);
        oq.apply(b.g);
        const Tensor q = run_reference(b);
        const Value& vy = b.g.value(b.g.nodes[0].outputs[0]);
        const CodeRange r = code_range(vy);
        const int64_t n = s[2] * s[3];
        for (int64_t c = 0; c < s[1]; ++c) {
          double mean = 0;
          for (int64_t i = 0; i < n; ++i) mean += 0.05 * (double(b.x.data<uint8_t>()[c * n + i]) - 17.0);
          mean /= double(n);
          const double want = std::clamp(mean / vy.quant->scale[0] + vy.quant->zero_point[0], double(r.lo), double(r.hi));
          ASSERT_NEAR(double(q.data<uint8_t>()[c]), want, 0.5 + 1e-4) << shape_str(s) << " out " << oq.str() << " c " << c;
        }
      }
}

TEST(Qu8Pool, GlobalAveragePoolRequantizesByHand) {
  // x: scale 0.1, zp 10; y: scale 0.02, zp 5. Plane {10, 30}: codes' mean 20, real 1.0, y code
  // 1.0 / 0.02 + 5 = 55. Plane {255, 255}: real 24.5, past y's last code: 255. Plane {0, 0}: real
  // -1.0, code -45: 0. As u4 codes (zp 5) the same three clamp to 15, 15, 0.
  for (bool u4 : {false, true}) {
    Built b = build("GlobalAveragePool", {1, 3, 1, 2}, {}, Fill::zeros, 1);
    b.g.value(b.g.nodes[0].inputs[0]).quant = QuantParams{{0.1f}, {10}, -1};
    b.g.value(b.g.nodes[0].outputs[0]).quant =
        QuantParams{{0.02f}, {5}, -1, u4 ? std::optional<DType>(DType::u4) : std::nullopt};
    const uint8_t xs[6] = {10, 30, 255, 255, 0, 0};
    std::memcpy(b.x.data<uint8_t>(), xs, 6);
    const Tensor ref = run_reference(b);
    EXPECT_EQ(std::vector<int>(ref.data<uint8_t>(), ref.data<uint8_t>() + 3),
              u4 ? std::vector<int>({15, 15, 0}) : std::vector<int>({55, 255, 0}));
#if defined(__x86_64__)
    if (!host_target().has(Feature::avx2)) continue;
#endif
    expect_exact(b, create_global_avgpool, u4 ? "by hand u4" : "by hand");
  }
}

TEST(Qu8Pool, GlobalAveragePoolRoundsHalfToEven) {
  // Planes of two values, zero points 0 and one scale: means 0.5, 1.5, 2.5, 254.5 round to 0, 2, 2,
  // 254 (nearbyint).
  Built b = build("GlobalAveragePool", {1, 4, 1, 2}, {}, Fill::zeros, 1);
  for (ValueId v : {b.g.nodes[0].inputs[0], b.g.nodes[0].outputs[0]}) b.g.value(v).quant->zero_point = {0};
  const uint8_t xs[8] = {0, 1, 1, 2, 2, 3, 254, 255};
  std::memcpy(b.x.data<uint8_t>(), xs, 8);
  const Tensor ref = run_reference(b);
  EXPECT_EQ(std::vector<int>(ref.data<uint8_t>(), ref.data<uint8_t>() + 4), (std::vector<int>{0, 2, 2, 254}));
#if defined(__x86_64__)
  if (!host_target().has(Feature::avx2)) return;
#endif
  expect_exact(b, create_global_avgpool, "half-even");
}

TEST(Qu8Pool, ChecksRejectFloatInputWithReason) {
  Graph g;
  ValueId vx = g.add_value("x", DType::f32, {1, 2, 5, 5}, true);
  ValueId vy = g.add_value("y", DType::f32, {1, 2, 3, 3}, true);
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{3, 3});
  g.add_node("MaxPool", "mp", {vx}, {vy}, a);
  ValueId vz = g.add_value("z", DType::f32, {1, 2, 1, 1}, true);
  g.add_node("GlobalAveragePool", "gap", {vx}, {vz}, {});
  Target t = parse_target("x86-64+avx2+fma");
  EXPECT_EQ(check_maxpool2d_u8(NodeContext{g, g.nodes[0], t, 1}), "input dtype f32, needs u8");
  EXPECT_EQ(check_global_avgpool_u8(NodeContext{g, g.nodes[1], t, 1}), "input dtype f32, needs u8");
}

#if defined(__x86_64__)  // the x86 rows' kernels are only in x86 builds
TEST(Qu8Pool, DispatchPicksU8KernelsForU8AndF32KernelsForF32) {
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{3, 3});
  a.set("strides", std::vector<int64_t>{2, 2});
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  Built mp = build("MaxPool", {1, 4, 9, 9}, a, Fill::random, 1);
  Built gap = build("GlobalAveragePool", {1, 4, 9, 9}, {}, Fill::random, 2);
  Target avx2 = parse_target("x86-64+avx2+fma");
  EXPECT_EQ(select_kernel(NodeContext{mp.g, mp.g.nodes[0], avx2, 1}).chosen->name, "qu8-maxpool2d-chw-avx2");
  EXPECT_EQ(select_kernel(NodeContext{gap.g, gap.g.nodes[0], avx2, 1}).chosen->name, "qu8-global-avgpool-avx2");
  // A different output scale would need requantization: the fast kernel declines with a reason.
  mp.g.value(mp.g.nodes[0].outputs[0]).quant->scale = {0.1f};
  EXPECT_NE(check_maxpool2d_u8(NodeContext{mp.g, mp.g.nodes[0], avx2, 1}), "");
  Target generic = parse_target("x86-64");
  EXPECT_EQ(select_kernel(NodeContext{gap.g, gap.g.nodes[0], generic, 1}).chosen->name, "reference-GlobalAveragePool");
}
#endif

}  // namespace
}  // namespace lowbit
