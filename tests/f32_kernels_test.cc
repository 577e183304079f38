// Every fast fp32 kernel against its reference kernel over odd shapes, plus thread-count
// invariance (results must be bit-identical for 1, 2 and 3 threads).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include "lowbit/dispatch/registry.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/kernels/f32-dwconv/f32_dwconv.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/runtime/thread_pool.h"
#include "dwconv_lanes_check.h"
#include "dwconv_s2_check.h"

namespace lowbit {
namespace {

// (shape_str trips GCC 12's -Wrestrict false positive when inlined here.)
std::string dims(const Shape& s) {
  std::ostringstream os;
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "x" : "") << s[i];
  return os.str();
}

bool host_has_avx2_fma() {
  Target t = host_target();
  return t.arch == Arch::x86_64 && t.has(Feature::avx2) && t.has(Feature::fma);
}

// The host's fp32 GEMM candidates named `prefix`* (conv igemm, gemm, matmul: one driver, a
// micro-kernel table per ISA): every ISA the host runs is tested (AVX-512 and AVX2 on an AVX-512
// machine), none when it has no SIMD kernels.
std::vector<std::string> host_gemm_candidates(const std::string& prefix) {
  const Target host = host_target();
  std::vector<std::string> names;
  for (const KernelCandidate& c : all_candidates()) {
    if (c.name.rfind(prefix, 0) != 0 || !c.create || c.arch != host.arch) continue;
    bool runs = true;
    for (Feature f : c.features) runs = runs && host.has(f);
    if (runs) names.push_back(c.name);
  }
  return names;
}
#define SKIP_WITHOUT_GEMM_ISA(prefix) \
  if (host_gemm_candidates(prefix).empty()) GTEST_SKIP() << "host has no SIMD fp32 GEMM kernels"

Tensor random_tensor(const Shape& s, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(DType::f32, s);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// A one-node graph plus the runtime values of its non-constant inputs.
struct OneNode {
  Graph g;
  std::map<ValueId, Tensor> runtime;

  ValueId input(const std::string& name, Tensor t) {
    ValueId v = g.add_value(name, t.dtype(), t.shape(), true);
    g.inputs.push_back(v);
    runtime[v] = std::move(t);
    return v;
  }
  ValueId constant(const std::string& name, Tensor t) { return g.add_constant(name, std::move(t)); }
  void node(const std::string& op, std::vector<ValueId> ins, Attributes attrs = {}) {
    ValueId y = g.add_value("y");
    g.add_node(op, "n0", std::move(ins), {y}, std::move(attrs));
    g.outputs = {y};
    validate(g);
  }
  const Node& n() const { return g.nodes.at(0); }

  std::vector<TensorView> in_views() const {
    std::vector<TensorView> v;
    for (ValueId id : n().inputs) {
      if (id == kNoValue)
        v.push_back(TensorView{});
      else if (const Tensor* c = g.constant(id))
        v.push_back(c->view());
      else
        v.push_back(runtime.at(id).view());
    }
    return v;
  }
  Tensor make_output() const { return Tensor(g.value(n().outputs[0]).dtype, g.value(n().outputs[0]).shape); }

  Tensor run_reference() const {
    ReferenceFn fn = find_reference(n().op);
    EXPECT_NE(fn, nullptr);
    Tensor y = make_output();
    std::vector<TensorView> in = in_views();
    std::vector<TensorView> out = {y.view()};
    fn(g, n(), in, out);
    return y;
  }

  // `caches`: the blocking's cache sizes instead of the host's.
  Tensor run_candidate(const std::string& name, int threads, const CacheSizes* caches = nullptr) const {
    const KernelCandidate* c = find_candidate(name);
    EXPECT_NE(c, nullptr) << name;
    Target target = host_target();
    if (caches) target.caches = *caches;
    NodeContext ctx{g, n(), target, threads};
    EXPECT_EQ(c->check(ctx), "") << name;
    std::unique_ptr<Kernel> k = c->create(ctx);
    ThreadPool pool(threads);
    Tensor y = make_output();
    std::vector<TensorView> in = in_views();
    std::vector<TensorView> out = {y.view()};
    k->run(in, out, pool);
    // A second run must give the same result (scratch reuse, padded buffers).
    Tensor y2 = make_output();
    std::vector<TensorView> out2 = {y2.view()};
    k->run(in, out2, pool);
    EXPECT_EQ(std::memcmp(y.raw(), y2.raw(), static_cast<size_t>(y.nbytes())), 0) << name << ": second run differs";
    return y;
  }

  std::string check(const std::string& name) const {
    Target target = host_target();
    NodeContext ctx{g, n(), target, 1};
    return find_candidate(name)->check(ctx);
  }
};

void expect_close(const Tensor& ref, const Tensor& got, const std::string& what) {
  ASSERT_EQ(ref.shape(), got.shape()) << what;
  float max_ref = 0, max_err = 0;
  int64_t worst = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const float r = ref.data<float>()[i], v = got.data<float>()[i];
    max_ref = std::max(max_ref, std::fabs(r));
    const float err = std::fabs(r - v);
    if (!(err <= max_err)) max_err = err, worst = i;
  }
  EXPECT_LE(max_err, 1e-4f * (1.0f + max_ref))
      << what << ": element " << worst << " ref " << ref.data<float>()[worst] << " got " << got.data<float>()[worst];
}

void expect_identical(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), static_cast<size_t>(a.nbytes())), 0) << what << ": thread counts disagree";
}

// Checks candidate `name` against the reference with 1, 2 and 3 threads.
void check_against_reference(const OneNode& t, const std::string& name, const std::string& what) {
  Tensor ref = t.run_reference();
  Tensor y1 = t.run_candidate(name, 1);
  expect_close(ref, y1, what);
  expect_identical(y1, t.run_candidate(name, 2), what);
  expect_identical(y1, t.run_candidate(name, 3), what);
}

// ---- Conv ----

struct ConvCase {
  int64_t N = 1, C, H, W, M, KH, KW;
  int64_t SH = 1, SW = 1, DH = 1, DW = 1;
  std::vector<int64_t> pads = {0, 0, 0, 0};
  int64_t group = 1;
  bool bias = true, residual = false;
  float act_min = -INFINITY, act_max = INFINITY;
  std::string post_op = "";  // fused activation after the clamp (post_op attribute)
  float post_alpha = NAN, post_beta = NAN;
  float post_scale = 1.0f, post_shift = 0.0f;  // then y * post_scale + post_shift

  std::string str() const {
    std::ostringstream s;
    s << "N" << N << " C" << C << " " << H << "x" << W << " M" << M << " k" << KH << "x" << KW << " s" << SH << ","
      << SW << " d" << DH << "," << DW << " pads";
    for (int64_t p : pads) s << " " << p;
    s << " g" << group << (bias ? " bias" : "") << (residual ? " residual" : "");
    if (std::isfinite(act_min) || std::isfinite(act_max)) s << " clamp[" << act_min << "," << act_max << "]";
    if (!post_op.empty()) s << " post " << post_op;
    if (post_scale != 1.0f || post_shift != 0.0f) s << " * " << post_scale << " + " << post_shift;
    return s.str();
  }
};

OneNode make_conv(const ConvCase& c, std::mt19937& rng) {
  OneNode t;
  ValueId x = t.input("x", random_tensor({c.N, c.C, c.H, c.W}, rng));
  ValueId w = t.constant("w", random_tensor({c.M, c.C / c.group, c.KH, c.KW}, rng));
  ValueId b = c.bias ? t.constant("b", random_tensor({c.M}, rng)) : kNoValue;
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{c.KH, c.KW});
  a.set("strides", std::vector<int64_t>{c.SH, c.SW});
  a.set("dilations", std::vector<int64_t>{c.DH, c.DW});
  a.set("pads", c.pads);
  a.set("group", c.group);
  if (std::isfinite(c.act_min)) a.set("act_min", c.act_min);
  if (std::isfinite(c.act_max)) a.set("act_max", c.act_max);
  if (!c.post_op.empty()) a.set("post_op", c.post_op);
  if (!std::isnan(c.post_alpha)) a.set("post_alpha", c.post_alpha);
  if (!std::isnan(c.post_beta)) a.set("post_beta", c.post_beta);
  if (c.post_scale != 1.0f) a.set("post_scale", c.post_scale);
  if (c.post_shift != 0.0f) a.set("post_shift", c.post_shift);
  std::vector<ValueId> ins = {x, w, b};
  if (c.residual) {
    const int64_t OH = (c.H + c.pads[0] + c.pads[2] - ((c.KH - 1) * c.DH + 1)) / c.SH + 1;
    const int64_t OW = (c.W + c.pads[1] + c.pads[3] - ((c.KW - 1) * c.DW + 1)) / c.SW + 1;
    ins.push_back(t.input("r", random_tensor({c.N, c.M, OH, OW}, rng)));
  }
  t.node("Conv", ins, a);
  return t;
}

std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> v;
  // 1x1 pointwise, channel counts around the tile sizes.
  for (int64_t C : {1, 3, 5, 17})
    for (int64_t M : {1, 5, 6, 7, 17}) v.push_back({.C = C, .H = 7, .W = 7, .M = M, .KH = 1, .KW = 1});
  // Around the 12 x 32 AVX-512 tile: M next to multiples of 12, pixel counts next to 32 and 16.
  for (int64_t M : {11, 12, 13, 25})
    for (auto [H, W] : std::vector<std::pair<int64_t, int64_t>>{{4, 8}, {3, 11}, {6, 6}, {5, 9}, {7, 7}})
      v.push_back({.C = 9, .H = H, .W = W, .M = M, .KH = 1, .KW = 1, .residual = M == 13, .act_min = 0});
  v.push_back({.C = 64, .H = 14, .W = 14, .M = 256, .KH = 1, .KW = 1, .residual = true, .act_min = 0});
  // Small images, where output channels take the vector lanes (rows = pixels): 7x7 outputs, a
  // tail channel panel, many K blocks, batch 2.
  v.push_back({.C = 64, .H = 7, .W = 7, .M = 64, .KH = 1, .KW = 1, .residual = true, .act_min = 0});
  v.push_back({.C = 40,
               .H = 14,
               .W = 14,
               .M = 48,
               .KH = 3,
               .KW = 3,
               .SH = 2,
               .SW = 2,
               .pads = {1, 1, 1, 1},
               .act_min = 0,
               .act_max = 6});
  v.push_back({.C = 300, .H = 3, .W = 3, .M = 100, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .residual = true});
  v.push_back({.N = 2, .C = 20, .H = 5, .W = 5, .M = 48, .KH = 1, .KW = 1, .bias = false});
  v.push_back({.C = 256, .H = 56, .W = 56, .M = 64, .KH = 1, .KW = 1, .act_min = 0});
  v.push_back({.C = 1024, .H = 14, .W = 14, .M = 17, .KH = 1, .KW = 1, .bias = false});  // 3 K blocks
  v.push_back({.C = 512, .H = 28, .W = 28, .M = 128, .KH = 1, .KW = 1, .SH = 2, .SW = 2, .bias = false});
  // 1x1 stride 1 unpadded reads B in place (full-width pixel panels; the last one packed): batch 2,
  // two groups, a pixel count past whole panels (66 = 2 x 32 + 2), residual, 2 K blocks with SqueezeNet's M = 16.
  v.push_back({.N = 2, .C = 34, .H = 6, .W = 11, .M = 26, .KH = 1, .KW = 1, .group = 2, .residual = true, .act_min = 0});
  v.push_back({.C = 300, .H = 15, .W = 15, .M = 16, .KH = 1, .KW = 1, .residual = true});
  // 3x3, strides, padding (symmetric and asymmetric), tiny spatial sizes.
  for (int64_t S : {1, 2})
    for (auto pads : std::vector<std::vector<int64_t>>{{0, 0, 0, 0}, {1, 1, 1, 1}, {0, 1, 2, 1}, {2, 0, 1, 2}})
      v.push_back({.C = 5, .H = 9, .W = 11, .M = 7, .KH = 3, .KW = 3, .SH = S, .SW = S, .pads = pads});
  v.push_back({.C = 3, .H = 1, .W = 1, .M = 5, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}});
  v.push_back({.C = 3, .H = 2, .W = 3, .M = 6, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .residual = true});
  v.push_back({.C = 64, .H = 56, .W = 56, .M = 64, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .act_min = 0});
  v.push_back({.C = 128,
               .H = 7,
               .W = 7,
               .M = 33,
               .KH = 3,
               .KW = 3,
               .pads = {1, 1, 1, 1},
               .residual = true,
               .act_min = 0,
               .act_max = 6});  // K = 1152: 3 K blocks with residual and clamp
  v.push_back({.C = 128,
               .H = 10,
               .W = 10,
               .M = 160,
               .KH = 3,
               .KW = 3,
               .pads = {1, 1, 1, 1},
               .residual = true,
               .act_min = 0});  // 27 channel panels: more than one weight block per K block
  v.push_back({.C = 17, .H = 15, .W = 13, .M = 19, .KH = 3, .KW = 3, .SH = 2, .SW = 1, .pads = {1, 0, 1, 0}});
  v.push_back({.C = 4, .H = 12, .W = 12, .M = 5, .KH = 3, .KW = 3, .SH = 3, .SW = 3, .pads = {1, 1, 1, 1}});
  // 7x7 stride 2 (ResNet stem), 5x5, non-square kernels.
  v.push_back(
      {.C = 3, .H = 32, .W = 30, .M = 64, .KH = 7, .KW = 7, .SH = 2, .SW = 2, .pads = {3, 3, 3, 3}, .act_min = 0});
  v.push_back({.C = 3, .H = 7, .W = 7, .M = 8, .KH = 7, .KW = 7, .pads = {3, 3, 3, 3}});
  v.push_back({.C = 6, .H = 10, .W = 9, .M = 4, .KH = 5, .KW = 5, .pads = {2, 2, 2, 2}, .bias = false});
  v.push_back({.C = 5, .H = 8, .W = 9, .M = 3, .KH = 1, .KW = 3, .pads = {0, 1, 0, 1}});
  v.push_back({.C = 5, .H = 8, .W = 9, .M = 3, .KH = 3, .KW = 1, .SH = 2, .pads = {1, 0, 1, 0}});
  // Dilation.
  v.push_back({.C = 5, .H = 13, .W = 12, .M = 7, .KH = 3, .KW = 3, .DH = 2, .DW = 2, .pads = {2, 2, 2, 2}});
  v.push_back({.C = 4,
               .H = 13,
               .W = 12,
               .M = 9,
               .KH = 3,
               .KW = 3,
               .SH = 2,
               .SW = 2,
               .DH = 2,
               .DW = 3,
               .pads = {1, 2, 0, 3},
               .residual = true,
               .act_min = -0.5f,
               .act_max = 0.5f});
  // Groups and depthwise (also via the generic igemm path).
  v.push_back({.C = 8, .H = 9, .W = 9, .M = 6, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .group = 2});
  v.push_back({.C = 16,
               .H = 7,
               .W = 10,
               .M = 20,
               .KH = 3,
               .KW = 3,
               .SH = 2,
               .SW = 2,
               .pads = {1, 1, 1, 1},
               .group = 4,
               .residual = true,
               .act_min = 0});
  v.push_back({.C = 8, .H = 5, .W = 5, .M = 16, .KH = 1, .KW = 1, .group = 4});
  v.push_back({.C = 17, .H = 9, .W = 11, .M = 17, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .group = 17});
  v.push_back({.C = 5,
               .H = 12,
               .W = 19,
               .M = 10,
               .KH = 3,
               .KW = 3,
               .SH = 2,
               .SW = 2,
               .pads = {1, 1, 1, 1},
               .group = 5});  // channel multiplier 2
  // Batch > 1.
  v.push_back({.N = 3, .C = 5, .H = 6, .W = 7, .M = 9, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .residual = true});
  return v;
}

std::vector<ConvCase> depthwise_cases() {
  std::vector<ConvCase> v;
  for (int64_t S : {1, 2, 3})
    for (auto pads : std::vector<std::vector<int64_t>>{{0, 0, 0, 0}, {1, 1, 1, 1}, {0, 2, 1, 0}})
      for (int64_t K : {3, 5})
        v.push_back({.C = 5, .H = 11, .W = 19, .M = 5, .KH = K, .KW = K, .SH = S, .SW = S, .pads = pads, .group = 5});
  v.push_back({.C = 32,
               .H = 112,
               .W = 112,
               .M = 32,
               .KH = 3,
               .KW = 3,
               .pads = {1, 1, 1, 1},
               .group = 32,
               .act_min = 0,
               .act_max = 6});
  // Stride 2 onto rows of several vectors (the direct stride-2 path on AVX-512): MobileNet's 112 ->
  // 56 with ReLU6, an odd 5x5 with a residual over a batch of 2 (task runs cross images).
  v.push_back({.C = 6, .H = 112, .W = 112, .M = 6, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .pads = {1, 1, 1, 1},
               .group = 6, .act_min = 0, .act_max = 6});
  v.push_back({.N = 2, .C = 7, .H = 61, .W = 75, .M = 7, .KH = 5, .KW = 5, .SH = 2, .SW = 2, .pads = {2, 2, 2, 2},
               .group = 7, .residual = true});
  v.push_back({.C = 17, .H = 1, .W = 1, .M = 17, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .group = 17});
  v.push_back({.C = 3,
               .H = 2,
               .W = 3,
               .M = 3,
               .KH = 3,
               .KW = 3,
               .pads = {1, 1, 1, 1},
               .group = 3,
               .bias = false,
               .residual = true});
  v.push_back({.C = 4,
               .H = 13,
               .W = 14,
               .M = 4,
               .KH = 3,
               .KW = 3,
               .SH = 2,
               .SW = 2,
               .DH = 2,
               .DW = 2,
               .pads = {2, 2, 2, 2},
               .group = 4,
               .residual = true,
               .act_min = -0.3f,
               .act_max = 0.3f});
  v.push_back({.C = 3, .H = 9, .W = 9, .M = 3, .KH = 7, .KW = 7, .pads = {3, 3, 3, 3}, .group = 3});
  v.push_back(
      {.N = 2, .C = 6, .H = 8, .W = 5, .M = 6, .KH = 3, .KW = 1, .SH = 1, .SW = 2, .pads = {1, 0, 1, 0}, .group = 6});
  // EfficientNet / MobileNet shapes: many small planes (a task takes a run of channels), 5x5 with
  // padding 2 at stride 1 and 2 on odd maps, a plane wider than 8 vectors of flat outputs.
  v.push_back({.C = 70, .H = 7, .W = 7, .M = 70, .KH = 5, .KW = 5, .pads = {2, 2, 2, 2}, .group = 70,
               .residual = true});
  v.push_back({.C = 9, .H = 15, .W = 15, .M = 9, .KH = 5, .KW = 5, .SH = 2, .SW = 2, .pads = {2, 2, 2, 2},
               .group = 9});
  v.push_back({.C = 4, .H = 29, .W = 31, .M = 4, .KH = 3, .KW = 3, .SH = 2, .SW = 1, .pads = {0, 1, 1, 1},
               .group = 4, .act_min = 0});
  v.push_back({.C = 3, .H = 1, .W = 40, .M = 3, .KH = 1, .KW = 5, .pads = {0, 2, 0, 2}, .group = 3});
  // Stride 1 at the input's size without symmetric padding or with dilation (the direct path's
  // lane masks): top 2 / left 0, and a dilated 3x3 with padding 2.
  v.push_back({.C = 5, .H = 10, .W = 17, .M = 5, .KH = 3, .KW = 3, .pads = {2, 0, 0, 2}, .group = 5,
               .residual = true});
  v.push_back({.C = 6, .H = 14, .W = 14, .M = 6, .KH = 3, .KW = 3, .DH = 2, .DW = 2, .pads = {2, 2, 2, 2},
               .group = 6});
  return v;
}

TEST(F32Kernels, ConvIgemm) {
  SKIP_WITHOUT_GEMM_ISA("f32-conv2d-igemm-");
  std::mt19937 rng(1);
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.str());
    OneNode t = make_conv(c, rng);
    for (const std::string& name : host_gemm_candidates("f32-conv2d-igemm-")) {
      SCOPED_TRACE(name);
      check_against_reference(t, name, c.str());
    }
  }
}

// Winograd F(2x2, 3x3): 3x3 stride 1 only, at least 32 output tiles and 8 input channels. Odd
// output sizes (a last tile half outside), asymmetric pads, tile counts around the panel widths
// (16 / 32, 8 / 16), several K blocks and channel panels, residual aliasing-free and clamps.
std::vector<ConvCase> winograd_cases() {
  std::vector<ConvCase> v;
  for (auto pads : std::vector<std::vector<int64_t>>{{1, 1, 1, 1}, {0, 0, 0, 0}, {0, 1, 2, 1}, {2, 0, 1, 2}})
    v.push_back({.C = 9, .H = 15, .W = 14, .M = 13, .KH = 3, .KW = 3, .pads = pads});
  v.push_back({.C = 8, .H = 11, .W = 13, .M = 7, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .bias = false});
  v.push_back({.C = 17, .H = 12, .W = 11, .M = 160, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .residual = true,
               .act_min = 0, .act_max = 6});
  v.push_back({.C = 300, .H = 12, .W = 12, .M = 25, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .residual = true,
               .act_min = 0});  // 2 K blocks
  v.push_back({.C = 64, .H = 56, .W = 56, .M = 64, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .act_min = 0});
  v.push_back({.C = 256, .H = 14, .W = 14, .M = 256, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .residual = true,
               .act_min = 0});
  // The fused walk (U in L2, V not: on 1-2 MB L2s): one-panel chunks across tile rows, a last
  // chunk short, 2 K blocks, residual.
  v.push_back({.C = 300, .H = 21, .W = 21, .M = 25, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .residual = true,
               .act_min = 0});
  v.push_back({.C = 12, .H = 17, .W = 9, .M = 33, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .act_min = -0.5f,
               .act_max = 0.5f});
  v.push_back({.N = 2, .C = 10, .H = 16, .W = 16, .M = 12, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .residual = true});
  return v;
}

TEST(F32Kernels, ConvWinograd) {
  SKIP_WITHOUT_GEMM_ISA("f32-conv2d-winograd-");
  std::mt19937 rng(5);
  for (const ConvCase& c : winograd_cases()) {
    SCOPED_TRACE(c.str());
    OneNode t = make_conv(c, rng);
    for (const std::string& name : host_gemm_candidates("f32-conv2d-winograd-")) {
      SCOPED_TRACE(name);
      check_against_reference(t, name, c.str());
    }
  }
}

// The L2 blocks (pixel blocks, weight-panel blocks, the Winograd walk) follow the host's caches,
// and only group work: from a 64 KB L2 to an 8 MB one, with 1 and 2 threads (and 3 with the host's
// caches), every igemm and Winograd row gives the same bytes as with the host's caches (and the
// host's match the reference).
TEST(F32Kernels, BlockingFollowsTheCachesWithoutChangingResults) {
  SKIP_WITHOUT_GEMM_ISA("f32-conv2d-igemm-");
  std::mt19937 rng(11);
  const std::vector<ConvCase> cases = {
      {.C = 64, .H = 56, .W = 56, .M = 64, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .act_min = 0},
      {.C = 256, .H = 28, .W = 28, .M = 128, .KH = 1, .KW = 1, .residual = true},
      {.C = 512, .H = 7, .W = 7, .M = 200, .KH = 1, .KW = 1, .act_min = 0},  // channels on the lanes
      // MnasNet's 14x14 projection: 3 channel panels, so 2 and 3 threads split the pixel rows too.
      {.C = 576, .H = 14, .W = 14, .M = 96, .KH = 1, .KW = 1, .residual = true, .act_min = -1, .act_max = 1},
      {.C = 300, .H = 14, .W = 14, .M = 96, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}},  // 2 K blocks
      // DenseNet's 128 -> 32 3x3, odd: Winograd's fused walk on 1-8 MB L2s (chunks of 1 to all
      // panels), two-phase on 64 KB, so the two walks must agree to the byte.
      {.C = 128, .H = 29, .W = 29, .M = 32, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .residual = true, .act_min = 0},
  };
  std::vector<CacheSizes> caches;
  // Tiny caches, a Xeon's (2 MB L2, 105 MB L3) and an oversized L2: the two ends of the blocking and
  // one real host. Two more specs between them made this the slowest test under qemu (89 s).
  for (const char* spec : {"l1d=16K,l2=64K", "l1d=48K,l2=2M,l3=105M", "l1d=64K,l2=8M"})
    caches.push_back(parse_cache_sizes(spec));
  std::vector<std::string> rows = host_gemm_candidates("f32-conv2d-igemm-");
  for (const std::string& r : host_gemm_candidates("f32-conv2d-winograd-")) rows.push_back(r);
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.str());
    OneNode t = make_conv(c, rng);
    const Tensor ref = t.run_reference();
    for (const std::string& name : rows) {
      if (!t.check(name).empty()) continue;  // Winograd: 3x3 only
      SCOPED_TRACE(name);
      const Tensor y = t.run_candidate(name, 1);
      expect_close(ref, y, c.str());
      for (const CacheSizes& cs : caches)
        for (int threads : {1, 2}) {
          SCOPED_TRACE(cs.to_string() + " threads " + std::to_string(threads));
          expect_identical(y, t.run_candidate(name, threads, &cs), c.str());
        }
      // 3 threads: the Winograd input transform's bands and the GEMM's tile-panel split at 3.
      expect_identical(y, t.run_candidate(name, 3), c.str());
    }
  }
}

TEST(F32Kernels, ConvWinogradChecksGiveReasons) {
  SKIP_WITHOUT_GEMM_ISA("f32-conv2d-winograd-");
  const std::string name = host_gemm_candidates("f32-conv2d-winograd-").front();
  std::mt19937 rng(6);
  auto check = [&](const ConvCase& c) { return make_conv(c, rng).check(name); };
  const std::vector<int64_t> p1 = {1, 1, 1, 1};
  EXPECT_EQ(check({.C = 8, .H = 16, .W = 16, .M = 8, .KH = 3, .KW = 3, .pads = p1}), "");
  EXPECT_EQ(check({.C = 8, .H = 16, .W = 16, .M = 8, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .pads = p1}),
            "stride 2x2, needs 1");
  EXPECT_EQ(check({.C = 8, .H = 16, .W = 16, .M = 8, .KH = 5, .KW = 5, .pads = p1}), "kernel 5x5, needs 3x3");
  EXPECT_EQ(check({.C = 8, .H = 16, .W = 16, .M = 8, .KH = 3, .KW = 3, .DH = 2, .DW = 2, .pads = p1}),
            "dilation 2x2, needs 1");
  EXPECT_EQ(check({.C = 8, .H = 16, .W = 16, .M = 8, .KH = 3, .KW = 3, .pads = p1, .group = 2}), "group 2, needs 1");
  EXPECT_EQ(check({.C = 8, .H = 7, .W = 7, .M = 8, .KH = 3, .KW = 3, .pads = p1}),
            "16 output tiles of 2x2, needs 32 to reuse the 16/9 larger transformed weights");
  EXPECT_EQ(check({.C = 4, .H = 16, .W = 16, .M = 8, .KH = 3, .KW = 3, .pads = p1}), "4 input channels, needs 8");
}

// The depthwise sets with masked loads (the direct paths) that this host runs.
std::vector<const F32DwconvKernels*> masked_load_dwconv_sets() {
  std::vector<const F32DwconvKernels*> sets;
#if defined(__x86_64__)
  const Target host = host_target();
  if (host.has(Feature::avx2) && host.has(Feature::fma)) sets.push_back(f32_dwconv_avx2());
  if (host.has(Feature::avx512f) && host.has(Feature::avx512bw)) sets.push_back(f32_dwconv_avx512());
#endif
  return sets;
}

// The direct path (stride 1, "same" padding: the unpadded plane read with masked loads) against
// the zero-padded plane summed tap by tap with fmaf, residual added, then clamped with maxps /
// minps order: bit for bit, with inf, NaN, -0 and huge values in the input and weights, so the
// masked lanes must give fma(w, 0, acc), not skip the tap and not read the neighbour row.
TEST(F32Kernels, DwconvDirectIsThePaddedPlane) {
  const std::vector<const F32DwconvKernels*> sets = masked_load_dwconv_sets();
  if (sets.empty()) GTEST_SKIP() << "no depthwise set with masked loads on this host";
  struct Geo {
    int64_t H, W, KH, KW, D, pt, pl;
  };
  const Geo geos[] = {{7, 7, 5, 5, 1, 2, 2},   {14, 14, 3, 3, 1, 1, 1}, {1, 1, 3, 3, 1, 1, 1},  {2, 3, 3, 3, 1, 1, 1},
                      {9, 9, 7, 7, 1, 3, 3},   {10, 17, 3, 3, 1, 2, 0}, {13, 5, 3, 3, 2, 2, 2}, {1, 40, 1, 5, 1, 0, 2},
                      {33, 35, 3, 3, 1, 1, 1}, {3, 50, 5, 5, 1, 2, 2}, {12, 112, 3, 3, 1, 1, 1},
                      {9, 56, 5, 5, 1, 2, 2}};
  std::mt19937 rng(21);
  // Shapes whose inner vectors take plain loads (every tap inside the plane), and shapes all masked.
  size_t plain_seen = 0, masked_seen = 0;
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  const float specials[] = {INFINITY, -INFINITY, NAN, -0.0f, 0.0f, 3e38f, -3e38f, 1e-42f};
  // 3 planes: a pair (the kernel interleaves two planes' chains) and one alone.
  constexpr int64_t P = 3;
  for (const Geo& g : geos)
    for (int extreme = 0; extreme < 2; ++extreme) {
      const int64_t n = g.H * g.W, taps = g.KH * g.KW;
      std::vector<float> x(static_cast<size_t>(P * n)), res(x.size()), w(static_cast<size_t>(P * taps));
      for (float& v : x) v = extreme && rng() % 5 == 0 ? specials[rng() % 8] : u(rng);
      for (float& v : res) v = u(rng);
      for (float& v : w) v = extreme && rng() % 4 == 0 ? specials[rng() % 8] : u(rng);
      const std::vector<float> bias = {extreme ? -0.0f : 0.375f, -1.25f, 0.5f};
      const float lo = extreme ? -1e30f : -1.5f, hi = extreme ? 1e30f : 1.25f;
      // The oracle: acc = bias, then fmaf per tap over the plane with zeros around it.
      std::vector<float> want(x.size());
      for (int64_t pl = 0; pl < P; ++pl)
        for (int64_t q = 0; q < n; ++q) {
          float acc = bias[static_cast<size_t>(pl)];
          for (int64_t kh = 0; kh < g.KH; ++kh)
            for (int64_t kw = 0; kw < g.KW; ++kw) {
              const int64_t ih = q / g.W + kh * g.D - g.pt, iw = q % g.W + kw * g.D - g.pl;
              const bool in = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
              acc = std::fmaf(w[static_cast<size_t>(pl * taps + kh * g.KW + kw)],
                              in ? x[static_cast<size_t>(pl * n + ih * g.W + iw)] : 0.0f, acc);
            }
          const float r = acc + res[static_cast<size_t>(pl * n + q)];
          const float m = lo > r ? lo : r;  // maxps(lo, r): r when either is NaN
          want[static_cast<size_t>(pl * n + q)] = hi < m ? hi : m;
        }
      for (const F32DwconvKernels* k : sets) {
        SCOPED_TRACE(std::string(k->isa) + " " + std::to_string(g.H) + "x" + std::to_string(g.W) + " k" +
                     std::to_string(g.KH) + "x" + std::to_string(g.KW) + " extreme " + std::to_string(extreme));
        ASSERT_NE(k->direct, nullptr);
        const int64_t L = static_cast<int64_t>(k->lanes), nvec = (n + L - 1) / L;
        std::vector<int32_t> off;
        std::vector<uint16_t> masks(static_cast<size_t>(taps * nvec), 0);
        for (int64_t kh = 0; kh < g.KH; ++kh)
          for (int64_t kw = 0; kw < g.KW; ++kw) {
            const int64_t dh = kh * g.D - g.pt, dw = kw * g.D - g.pl, t = kh * g.KW + kw;
            off.push_back(static_cast<int32_t>(dh * g.W + dw));
            for (int64_t q = 0; q < n; ++q) {
              const int64_t ih = q / g.W + dh, iw = q % g.W + dw;
              if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W)
                masks[static_cast<size_t>(t * nvec + q / L)] |= static_cast<uint16_t>(1u << (q % L));
            }
          }
        std::vector<uint32_t> order(static_cast<size_t>(nvec));
        const size_t n_plain = f32_dwconv_direct_order(masks.data(), static_cast<size_t>(taps),
                                                       static_cast<size_t>(nvec), k->lanes, order.data());
        (n_plain > 0 ? plain_seen : masked_seen) += 1;
        // The plane alone on the heap (ASan: a lane read outside it is reported), the output with a
        // guard after it that must stay untouched.
        std::vector<float> y(x.size() + 20, 7.0f);
        k->direct(x.data(), off.data(), masks.data(), order.data(), n_plain, w.data(), static_cast<size_t>(taps),
                  bias.data(), static_cast<size_t>(n), P, res.data(), lo, hi, y.data());
        for (int64_t q = 0; q < P * n; ++q) {
          const float a = y[static_cast<size_t>(q)], b = want[static_cast<size_t>(q)];
          ASSERT_TRUE(std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)))
              << "q " << q << ": " << a << " want " << b;
        }
        for (size_t i = x.size(); i < y.size(); ++i) ASSERT_EQ(y[i], 7.0f) << "wrote past the plane at " << i;
      }
    }
  EXPECT_GT(plain_seen, 0u);
  EXPECT_GT(masked_seen, 0u);
}

// The stride-2 direct path of every set with masked loads, bit for bit (dwconv_s2_check.h).
TEST(F32Kernels, DwconvDirectS2IsThePaddedPlane) {
  const std::vector<const F32DwconvKernels*> sets = masked_load_dwconv_sets();
  if (sets.empty()) GTEST_SKIP() << "no depthwise set with masked loads on this host";
  for (const F32DwconvKernels* k : sets) {
    SCOPED_TRACE(k->isa);
    dwconv_check::check_dwconv_direct_s2(*k);
  }
}

TEST(F32Kernels, ConvDepthwise) {
  const std::vector<std::string> rows = host_gemm_candidates("f32-dwconv2d-");
  if (rows.empty()) GTEST_SKIP() << "host has no SIMD depthwise kernels";
  std::mt19937 rng(2);
  std::map<std::string, int> ran;
  for (const ConvCase& c : depthwise_cases()) {
    SCOPED_TRACE(c.str());
    OneNode t = make_conv(c, rng);
    std::vector<std::string> taken;
    for (const std::string& name : rows) {
      SCOPED_TRACE(name);
      // Channels on the lanes take small output planes only (their rule's reason says which).
      if (const std::string why = t.check(name); !why.empty()) {
        EXPECT_NE(name.find("-c"), std::string::npos) << "a flat row refused a depthwise conv: " << why;
        continue;
      }
      check_against_reference(t, name, c.str());
      taken.push_back(name);
      ++ran[name];
    }
    // Every set and layout sums the taps in the same order with one FMA each: the same bits.
    for (size_t i = 1; i < taken.size(); ++i)
      expect_identical(t.run_candidate(taken[0], 1), t.run_candidate(taken[i], 1), taken[0] + " vs " + taken[i]);
  }
  for (const std::string& name : rows) EXPECT_GE(ran[name], 10) << name << " ran on too few cases";
}

// Grouped convs with up to `lanes` channels per group on the channels-on-lanes rows: groups of 2-16
// (RegNet's 8, ResNeXt's 4-32), 1x1 / 3x3 / 5x5, strides 1-2, dilation, odd pads, a group count
// that is not a multiple of anything, residual and clamps, a batch of 2; against the reference
// and the same bytes on 1, 2 and 3 threads. Over the lanes the rule refuses with its reason.
TEST(F32Kernels, ConvGroupedOnTheLanes) {
  const std::vector<std::string> rows = host_gemm_candidates("f32-gconv2d-");
  if (rows.empty()) GTEST_SKIP() << "host has no SIMD grouped-conv kernels";
  const std::vector<ConvCase> cases = {
      {.C = 16, .H = 7, .W = 7, .M = 16, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .group = 2},
      {.C = 40, .H = 14, .W = 13, .M = 40, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .pads = {1, 1, 1, 1}, .group = 5,
       .act_min = 0},
      {.C = 12, .H = 9, .W = 11, .M = 12, .KH = 3, .KW = 3, .pads = {0, 1, 2, 1}, .group = 3, .residual = true},
      {.C = 6, .H = 10, .W = 10, .M = 6, .KH = 5, .KW = 5, .DH = 2, .DW = 2, .pads = {4, 4, 4, 4}, .group = 3,
       .bias = false},
      {.C = 28, .H = 6, .W = 5, .M = 28, .KH = 1, .KW = 1, .group = 7, .act_min = -0.5f, .act_max = 0.5f},
      {.N = 2, .C = 32, .H = 8, .W = 8, .M = 32, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .group = 2,
       .residual = true},  // 16 per group: AVX-512 only
      {.C = 64, .H = 15, .W = 15, .M = 64, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .pads = {1, 1, 1, 1}, .group = 8},
  };
  std::mt19937 rng(21);
  std::map<std::string, int> ran;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.str());
    OneNode t = make_conv(c, rng);
    for (const std::string& name : rows) {
      SCOPED_TRACE(name);
      const int64_t lanes = name.find("-c16-") != std::string::npos ? 16 : 8;
      if (c.C / c.group > lanes) {
        EXPECT_EQ(t.check(name), std::to_string(c.C / c.group) + " channels per group, over the " +
                                     std::to_string(lanes) + " lanes");
        continue;
      }
      ASSERT_EQ(t.check(name), "");
      check_against_reference(t, name, c.str());
      const Tensor y = t.run_candidate(name, 1);
      expect_identical(y, t.run_candidate(name, 2), c.str());
      expect_identical(y, t.run_candidate(name, 3), c.str());
      ++ran[name];
    }
  }
  for (const std::string& name : rows) EXPECT_GE(ran[name], 6) << name << " ran on too few cases";
  std::mt19937 rng2(22);
  OneNode uneven = make_conv({.C = 8, .H = 5, .W = 5, .M = 16, .KH = 3, .KW = 3, .group = 4}, rng2);
  EXPECT_EQ(uneven.check(rows.front()), "grouped with 2 input and 4 output channels per group; needs as many of each");
  OneNode dw = make_conv({.C = 8, .H = 5, .W = 5, .M = 8, .KH = 3, .KW = 3, .group = 8}, rng2);
  EXPECT_EQ(dw.check(rows.front()), "depthwise (the dwconv rows take it)");
  // Groups on at most half the lanes only on planes up to 14x14 (ResNeXt's 4 per group on 56x56
  // stays on the implicit GEMM).
  OneNode wide = make_conv({.C = 16, .H = 20, .W = 20, .M = 16, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .group = 4},
                           rng2);
  for (const std::string& name : rows) {
    const std::string lanes = name.find("-c16-") != std::string::npos ? "16" : "8";
    EXPECT_EQ(wide.check(name), "4 channels per group fill at most half the " + lanes +
                                    " lanes, and the output 20x20 is over the 196 pixels where that still beats the "
                                    "implicit GEMM");
  }
}

// The channels-on-lanes kernel of every set this host runs (and NEON's on AArch64), bit for bit
// against the padded planes summed with fmaf (dwconv_lanes_check.h).
TEST(F32Kernels, DwconvLanesIsThePaddedPlane) {
  std::vector<const F32DwconvKernels*> sets;
#if defined(__x86_64__)
  const Target host = host_target();
  if (host.has(Feature::avx2) && host.has(Feature::fma)) sets.push_back(f32_dwconv_avx2());
  if (host.has(Feature::avx512f) && host.has(Feature::avx512bw)) sets.push_back(f32_dwconv_avx512());
#elif defined(__aarch64__)
  sets.push_back(f32_dwconv_neon());
#endif
  if (sets.empty()) GTEST_SKIP() << "no depthwise set on this host";
  for (const F32DwconvKernels* k : sets) dwconv_check::check_dwconv_lanes(*k);
}

// The fused post-ops (SiLU, HardSwish, ... applied by the conv to each output tile) on every fp32
// Conv row the host runs, against the reference conv followed by the op's own reference kernel:
// pixel panels with a tail, channels on the lanes (7x7), Winograd tiles cut by the plane's edge,
// depthwise stride 2 and 5x5 with padding 2, each with a residual or clamp before the post-op.
TEST(F32Kernels, ConvPostOps) {
  std::vector<std::string> rows = host_gemm_candidates("f32-conv2d-");
  for (const std::string& r : host_gemm_candidates("f32-dwconv2d-")) rows.push_back(r);
  for (const std::string& r : host_gemm_candidates("f32-gconv2d-")) rows.push_back(r);
  if (rows.empty()) GTEST_SKIP() << "host has no SIMD fp32 conv kernels";
  struct Post {
    const char* op;
    float alpha, beta;
  };
  const Post posts[] = {{"SiLU", NAN, NAN},         {"HardSwish", NAN, NAN}, {"Sigmoid", NAN, NAN},
                        {"HardSigmoid", 0.25f, 0.4f}, {"HardSigmoid", NAN, NAN}, {"LeakyRelu", 0.1f, NAN},
                        {"LeakyRelu", NAN, NAN}};
  const std::vector<ConvCase> shapes = {
      {.C = 20, .H = 10, .W = 9, .M = 30, .KH = 1, .KW = 1, .residual = true},
      {.C = 9, .H = 15, .W = 14, .M = 13, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .act_min = -0.5f, .act_max = 2},
      {.C = 300, .H = 12, .W = 11, .M = 25, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .residual = true},
      {.C = 64, .H = 7, .W = 7, .M = 40, .KH = 1, .KW = 1},
      {.C = 5, .H = 11, .W = 19, .M = 5, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .pads = {1, 1, 1, 1}, .group = 5},
      {.C = 6, .H = 9, .W = 13, .M = 6, .KH = 5, .KW = 5, .pads = {2, 2, 2, 2}, .group = 6, .residual = true},
      {.C = 24, .H = 7, .W = 7, .M = 24, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .group = 3, .residual = true},
  };
  std::mt19937 rng(12);
  int checked = 0;
  for (const Post& po : posts)
    for (ConvCase c : shapes) {
      c.post_op = po.op;
      c.post_alpha = po.alpha;
      c.post_beta = po.beta;
      SCOPED_TRACE(c.str());
      OneNode t = make_conv(c, rng);
      for (const std::string& name : rows) {
        if (!t.check(name).empty()) continue;
        SCOPED_TRACE(name);
        check_against_reference(t, name, c.str());
        ++checked;
      }
    }
  EXPECT_GE(checked, 7 * 7);  // every shape ran on at least one row
}

// A scale and shift after the activation (fuse_epilogues' post_scale / post_shift: PP-LCNet's
// learnable affine after HardSwish), with and without a post-op, on every fp32 conv row the host
// runs: the same shapes as ConvPostOps (tile tails, Winograd edges, depthwise stride 2 and 5x5).
TEST(F32Kernels, ConvPostAffine) {
  std::vector<std::string> rows = host_gemm_candidates("f32-conv2d-");
  for (const std::string& r : host_gemm_candidates("f32-dwconv2d-")) rows.push_back(r);
  if (rows.empty()) GTEST_SKIP() << "host has no SIMD fp32 conv kernels";
  const std::vector<ConvCase> shapes = {
      {.C = 20, .H = 10, .W = 9, .M = 30, .KH = 1, .KW = 1, .act_min = 0},
      {.C = 9, .H = 15, .W = 14, .M = 13, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .act_min = -0.5f, .act_max = 2},
      {.C = 300, .H = 12, .W = 11, .M = 25, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}, .post_op = "HardSwish"},
      {.C = 64, .H = 7, .W = 7, .M = 40, .KH = 1, .KW = 1, .post_op = "HardSwish"},
      {.C = 5, .H = 11, .W = 19, .M = 5, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .pads = {1, 1, 1, 1}, .group = 5,
       .post_op = "HardSwish"},
      {.C = 6, .H = 9, .W = 13, .M = 6, .KH = 5, .KW = 5, .pads = {2, 2, 2, 2}, .group = 6, .residual = true,
       .act_min = 0, .post_op = "SiLU"},
  };
  std::mt19937 rng(13);
  int checked = 0;
  for (ConvCase c : shapes)
    for (auto [scale, shift] : std::vector<std::pair<float, float>>{{0.63f, -0.55f}, {1.0f, 0.8f}, {-2.5f, 0.0f}}) {
      c.post_scale = scale;
      c.post_shift = shift;
      SCOPED_TRACE(c.str());
      OneNode t = make_conv(c, rng);
      for (const std::string& name : rows) {
        if (!t.check(name).empty()) continue;
        SCOPED_TRACE(name);
        check_against_reference(t, name, c.str());
        ++checked;
      }
    }
  EXPECT_GE(checked, 6 * 3);
}

TEST(F32Kernels, ConvChecksGiveReasons) {
  std::mt19937 rng(3);
  OneNode grouped = make_conv({.C = 8, .H = 5, .W = 5, .M = 8, .KH = 3, .KW = 3, .group = 4}, rng);
  EXPECT_EQ(grouped.check("f32-dwconv2d-flat-avx2"), "group 4 is not depthwise (C=8, M=8)");
  EXPECT_EQ(grouped.check("f32-conv2d-igemm-6x16-avx2"), "");

  OneNode runtime_w;
  ValueId x = runtime_w.input("x", random_tensor({1, 3, 5, 5}, rng));
  ValueId w = runtime_w.input("w", random_tensor({4, 3, 3, 3}, rng));
  runtime_w.node("Conv", {x, w});
  EXPECT_EQ(runtime_w.check("f32-conv2d-igemm-6x16-avx2"), "weights not constant");
}

// ---- pooling ----

struct PoolCase {
  const char* op;
  int64_t N = 1, C, H, W, KH, KW, SH = 1, SW = 1;
  std::vector<int64_t> pads = {0, 0, 0, 0};
  int64_t ceil_mode = 0, count_include_pad = 0, DH = 1, DW = 1;

  Attributes attrs() const {
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{KH, KW});
    a.set("strides", std::vector<int64_t>{SH, SW});
    a.set("pads", pads);
    a.set("ceil_mode", ceil_mode);
    if (DH != 1 || DW != 1) a.set("dilations", std::vector<int64_t>{DH, DW});
    if (std::string(op) == "AveragePool") a.set("count_include_pad", count_include_pad);
    return a;
  }

  std::string str() const {
    std::ostringstream s;
    s << op << " N" << N << " C" << C << " " << H << "x" << W << " k" << KH << "x" << KW << " s" << SH << "," << SW
      << " d" << DH << "," << DW << " pads";
    for (int64_t p : pads) s << " " << p;
    s << " ceil" << ceil_mode << " incl" << count_include_pad;
    return s.str();
  }
};

TEST(F32Kernels, Pool) {
  const std::vector<std::string> max_rows = host_gemm_candidates("f32-maxpool2d-"),
                                 avg_rows = host_gemm_candidates("f32-avgpool2d-");
  if (max_rows.empty()) GTEST_SKIP() << "host has no SIMD pooling kernels";
  std::vector<PoolCase> cases;
  for (const char* op : {"MaxPool", "AveragePool"}) {
    cases.push_back({.op = op, .C = 64, .H = 112, .W = 112, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .pads = {1, 1, 1, 1}});
    cases.push_back({.op = op, .C = 3, .H = 8, .W = 8, .KH = 2, .KW = 2, .SH = 2, .SW = 2});
    cases.push_back({.op = op, .C = 5, .H = 9, .W = 10, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .ceil_mode = 1});
    cases.push_back(
        {.op = op, .C = 5, .H = 9, .W = 10, .KH = 3, .KW = 2, .SH = 2, .SW = 3, .pads = {1, 0, 2, 1}, .ceil_mode = 1});
    cases.push_back({.op = op, .C = 2, .H = 1, .W = 1, .KH = 3, .KW = 3, .pads = {1, 1, 1, 1}});
    cases.push_back({.op = op, .N = 2, .C = 3, .H = 7, .W = 13, .KH = 3, .KW = 5, .pads = {1, 2, 1, 2}});
    cases.push_back({.op = op, .C = 3, .H = 11, .W = 11, .KH = 3, .KW = 3, .SH = 1, .SW = 2, .DH = 2, .DW = 2});
    // SqueezeNet's ceil-mode pools: 111 -> 55 and 55 -> 27, rows of 3.4 and 1.7 zmm.
    cases.push_back({.op = op, .C = 3, .H = 111, .W = 111, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .ceil_mode = 1});
    cases.push_back({.op = op, .C = 2, .H = 55, .W = 55, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .ceil_mode = 1});
    cases.push_back({.op = op, .C = 2, .H = 9, .W = 40, .KH = 2, .KW = 3, .SW = 1, .pads = {0, 1, 1, 1}});
  }
  for (int64_t incl : {0, 1})
    for (int64_t ceil : {0, 1})
      cases.push_back({.op = "AveragePool",
                       .C = 4,
                       .H = 10,
                       .W = 9,
                       .KH = 3,
                       .KW = 3,
                       .SH = 2,
                       .SW = 2,
                       .pads = {1, 1, 0, 1},
                       .ceil_mode = ceil,
                       .count_include_pad = incl});
  std::mt19937 rng(4);
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(c.str());
    OneNode t;
    ValueId x = t.input("x", random_tensor({c.N, c.C, c.H, c.W}, rng));
    t.node(c.op, {x}, c.attrs());
    for (const std::string& row : std::string(c.op) == "MaxPool" ? max_rows : avg_rows) {
      SCOPED_TRACE(row);
      check_against_reference(t, row, c.str());
    }
  }
}

// Max is exact, so every MaxPool row gives the reference's values with NaN and +-inf in the input:
// the separable passes (column max, then row max) must keep what `v > best` keeps, window by window,
// even where a whole window, a whole column of one or the padding alone is NaN. (Where +0 and -0 tie
// for a window's maximum the sign may differ: the passes visit the taps columns first.)
TEST(F32Kernels, MaxPoolIsExactWithNanAndInf) {
  const std::vector<std::string> rows = host_gemm_candidates("f32-maxpool2d-");
  if (rows.empty()) GTEST_SKIP() << "host has no SIMD pooling kernels";
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> specials = {nan, inf, -inf, -0.0f, 0.0f, 3.5f, -3.5f, -std::numeric_limits<float>::max()};
  std::mt19937 rng(14);
  std::vector<PoolCase> cases = {
      {.op = "MaxPool", .C = 3, .H = 37, .W = 37, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .pads = {1, 1, 1, 1}},
      {.op = "MaxPool", .C = 2, .H = 19, .W = 35, .KH = 3, .KW = 3, .SH = 2, .SW = 2, .ceil_mode = 1},
      {.op = "MaxPool", .C = 2, .H = 9, .W = 21, .KH = 2, .KW = 5, .SH = 1, .SW = 3, .pads = {1, 2, 0, 2}},
      {.op = "MaxPool", .C = 2, .H = 11, .W = 17, .KH = 3, .KW = 3, .DH = 2, .DW = 2}};
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(c.str());
    Tensor x = random_tensor({c.N, c.C, c.H, c.W}, rng);
    float* p = x.data<float>();
    std::uniform_int_distribution<size_t> pick(0, specials.size() - 1);
    for (int64_t i = 0; i < x.numel(); ++i)
      if (rng() % 3 == 0) p[i] = specials[pick(rng)];
    for (int64_t i = 0; i < c.W * 3; ++i) p[i] = nan;  // whole windows of NaN along the top
    OneNode t;
    ValueId xv = t.input("x", std::move(x));
    t.node(c.op, {xv}, c.attrs());
    const Tensor ref = t.run_reference();
    for (const std::string& row : rows) {
      SCOPED_TRACE(row);
      const Tensor got = t.run_candidate(row, 2);
      ASSERT_EQ(ref.shape(), got.shape());
      for (int64_t i = 0; i < ref.numel(); ++i) {
        const float r = ref.data<float>()[i], v = got.data<float>()[i];
        ASSERT_FALSE(std::isnan(r)) << "element " << i << ": the reference never keeps a NaN";
        ASSERT_EQ(r, v) << "element " << i;
      }
    }
  }
}

TEST(F32Kernels, GlobalAveragePool) {
  if (!host_has_avx2_fma()) GTEST_SKIP() << "host lacks avx2+fma";
  std::mt19937 rng(5);
  for (Shape s : std::vector<Shape>{{1, 2048, 7, 7}, {2, 5, 1, 1}, {1, 3, 17, 3}, {1, 130, 4, 4}}) {
    SCOPED_TRACE(dims(s));
    OneNode t;
    ValueId x = t.input("x", random_tensor(s, rng));
    t.node("GlobalAveragePool", {x});
    check_against_reference(t, "f32-global-avgpool-avx2", dims(s));
  }
}

// ---- fully connected ----

struct GemmCase {
  int64_t M, K, N;
  bool trans_a = false, trans_b = true;
  Shape bias = {};  // empty: no bias
  float alpha = 1, beta = 1;
  float act_min = -INFINITY, act_max = INFINITY;
};

// ReduceMean over the spatial axes runs the global average pool's kernel: keepdims 0 and 1,
// negative axes, rank 3 and 4; other axes are refused with the reason.
TEST(F32Kernels, ReduceMeanSpatial) {
  const std::vector<std::string> rows = host_gemm_candidates("f32-reducemean-");
  if (rows.empty()) GTEST_SKIP() << "host has no SIMD ReduceMean row";
  std::mt19937 rng(8);
  struct RCase {
    Shape x;
    std::vector<int64_t> axes;
    int64_t keepdims;
    std::string why;  // "" when the row applies
  };
  const RCase cases[] = {
      {{2, 5, 7, 9}, {2, 3}, 1, ""},
      {{1, 1024, 7, 7}, {3, 2}, 0, ""},
      {{2, 3, 17, 1}, {-1, -2}, 1, ""},
      {{3, 4, 33}, {2}, 0, ""},
      {{2, 5, 7, 9}, {1, 2, 3}, 1, "axes are not exactly the spatial axes 2..3"},
      {{2, 5, 7, 9}, {3}, 1, "axes are not exactly the spatial axes 2..3"},
  };
  for (const RCase& c : cases) {
    OneNode t;
    ValueId x = t.input("x", random_tensor(c.x, rng));
    Attributes a;
    a.set("axes", c.axes);
    a.set("keepdims", c.keepdims);
    t.node("ReduceMean", {x}, a);
    for (const std::string& row : rows) {
      SCOPED_TRACE(row + " " + dims(c.x));
      EXPECT_EQ(t.check(row), c.why);
      if (c.why.empty()) check_against_reference(t, row, dims(c.x));
    }
  }
}

TEST(F32Kernels, Gemm) {
  SKIP_WITHOUT_GEMM_ISA("f32-gemm-fc-");
  std::vector<GemmCase> cases = {
      {.M = 1, .K = 2048, .N = 1000, .bias = {1000}},
      {.M = 1, .K = 17, .N = 9, .trans_b = false, .bias = {1, 9}},
      {.M = 3, .K = 5, .N = 24, .bias = {1}, .alpha = 0.5f, .beta = 2.0f},
      {.M = 7, .K = 33, .N = 17, .trans_a = true, .trans_b = false},
      {.M = 13, .K = 64, .N = 40, .bias = {40}, .act_min = 0, .act_max = 1},
      {.M = 25, .K = 300, .N = 49, .bias = {49}},  // row and column tails of the 12 x 32 tile
      {.M = 12, .K = 9, .N = 16, .trans_b = false},
  };
  std::mt19937 rng(6);
  for (const GemmCase& c : cases) {
    std::ostringstream os;
    os << "M" << c.M << " K" << c.K << " N" << c.N;
    const std::string what = os.str();
    SCOPED_TRACE(what);
    OneNode t;
    ValueId a = t.input("a", random_tensor(c.trans_a ? Shape{c.K, c.M} : Shape{c.M, c.K}, rng));
    ValueId b = t.constant("b", random_tensor(c.trans_b ? Shape{c.N, c.K} : Shape{c.K, c.N}, rng));
    std::vector<ValueId> ins = {a, b};
    if (!c.bias.empty()) ins.push_back(t.constant("c", random_tensor(c.bias, rng)));
    Attributes at;
    at.set("transA", int64_t{c.trans_a});
    at.set("transB", int64_t{c.trans_b});
    at.set("alpha", c.alpha);
    at.set("beta", c.beta);
    if (std::isfinite(c.act_min)) at.set("act_min", c.act_min);
    if (std::isfinite(c.act_max)) at.set("act_max", c.act_max);
    t.node("Gemm", ins, at);
    for (const std::string& name : host_gemm_candidates("f32-gemm-fc-")) {
      SCOPED_TRACE(name);
      check_against_reference(t, name, what);
    }
  }
}

TEST(F32Kernels, FullyConnectedChecksGiveReasons) {
  std::mt19937 rng(8);
  OneNode full_c;
  ValueId a = full_c.input("a", random_tensor({3, 4}, rng));
  ValueId b = full_c.constant("b", random_tensor({4, 5}, rng));
  ValueId c = full_c.constant("c", random_tensor({3, 5}, rng));
  full_c.node("Gemm", {a, b, c});
  EXPECT_EQ(full_c.check("f32-gemm-fc-6x16-avx2"), "C shape 3x5 unsupported, needs a scalar, N or 1xN bias");

  OneNode runtime_b;
  ValueId a2 = runtime_b.input("a", random_tensor({2, 4}, rng));
  ValueId b2 = runtime_b.input("b", random_tensor({4, 5}, rng));
  runtime_b.node("MatMul", {a2, b2});
  EXPECT_EQ(runtime_b.check("f32-matmul-fc-6x16-avx2"), "weights (B) not constant");
}

TEST(F32Kernels, MatMul) {
  SKIP_WITHOUT_GEMM_ISA("f32-matmul-fc-");
  std::mt19937 rng(7);
  for (auto [as, bs] :
       std::vector<std::pair<Shape, Shape>>{
           {{1, 512}, {512, 10}}, {{2, 3, 19}, {19, 33}}, {{7}, {7, 5}}, {{14, 70}, {70, 48}}}) {
    SCOPED_TRACE(dims(as) + " * " + dims(bs));
    OneNode t;
    ValueId a = t.input("a", random_tensor(as, rng));
    ValueId b = t.constant("b", random_tensor(bs, rng));
    t.node("MatMul", {a, b});
    for (const std::string& name : host_gemm_candidates("f32-matmul-fc-")) {
      SCOPED_TRACE(name);
      check_against_reference(t, name, dims(as));
    }
  }
}

}  // namespace
}  // namespace lowbit
