// QuantizeLinear / DequantizeLinear fast kernels against the reference, byte for byte: rounding
// ties (half to even), the saturation bounds, NaN and infinities, subnormals, every length mod 32,
// zero points 0 / 128 / 255, 1 and 2 threads, on every row of the dispatch table the host runs
// (AVX2 on x86-64, NEON on AArch64). Also which nodes the kernels decline.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "lowbit/dispatch/registry.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/operators/quantize_u8.h"
#include "lowbit/target/target.h"

namespace lowbit {
namespace {

struct QNode {
  Graph g;
  Tensor scale, zp;
};

// x (dtype xt, n values) -> op -> y (dtype yt); scale / zero point as constants.
QNode build(const char* op, DType xt, DType yt, int64_t n, float scale, int32_t zp, bool with_zp = true,
            DType zpt = DType::u8) {
  QNode q;
  q.scale = Tensor(DType::f32, {});
  q.scale.data<float>()[0] = scale;
  ValueId vx = q.g.add_value("x", xt, {n}, true);
  std::vector<ValueId> ins = {vx, q.g.add_constant("s", q.scale)};
  if (with_zp) {
    q.zp = Tensor(zpt, {});
    if (zpt == DType::u8) q.zp.data<uint8_t>()[0] = static_cast<uint8_t>(zp);
    else q.zp.data<int8_t>()[0] = static_cast<int8_t>(zp);
    ins.push_back(q.g.add_constant("z", q.zp));
  }
  ValueId vy = q.g.add_value("y", yt, {n}, true);
  q.g.add_node(op, "q", ins, {vy});
  return q;
}

// Inputs that probe the rounding: exact ties at scale 1 and 0.5, values around every tie, the
// saturation bounds, NaN, infinities, huge and subnormal values, plus random ones.
std::vector<float> probe_values(int64_t n, uint32_t seed) {
  std::vector<float> v;
  for (int i = -300; i <= 300; ++i) v.push_back(static_cast<float>(i) * 0.5f);
  for (int i = -300; i <= 300; ++i) {
    const float t = static_cast<float>(i) + 0.5f;
    v.push_back(std::nextafter(t, -1e9f));
    v.push_back(std::nextafter(t, 1e9f));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float s : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(), inf, -inf, 3e38f,
                  -3e38f, 2147483648.0f, -2147483904.0f, 1e-40f, -1e-40f, 0.0f, -0.0f})
    v.push_back(s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-400.0f, 400.0f);
  while (static_cast<int64_t>(v.size()) < n) v.push_back(d(rng));
  v.resize(static_cast<size_t>(n));
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

template <class T>
void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.numel(), want.numel());
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_EQ(std::memcmp(got.data<T>() + i, want.data<T>() + i, sizeof(T)), 0)
        << what << " at " << i << ": got " << +got.data<T>()[i] << " want " << +want.data<T>()[i];
}

// The fast rows of `op` this host runs (the reference row is the oracle).
std::vector<const KernelCandidate*> host_rows(const char* op) {
  std::vector<const KernelCandidate*> rows;
  for (const KernelCandidate* kc : candidates_for(op)) {
    if (kc->name.starts_with("reference") || !kc->create) continue;
    bool runs = true;
    for (Feature f : kc->features) runs = runs && host_target().has(f);
    if (runs) rows.push_back(kc);
  }
  return rows;
}

TEST(Qu8Quantize, QuantizeMatchesReference) {
  const auto rows = host_rows("QuantizeLinear");
  if (rows.empty()) GTEST_SKIP() << "no fast QuantizeLinear row runs here";
  for (const KernelCandidate* kc : rows) {
    uint32_t seed = 1;
    for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 100, 2048, 40000})
      for (float scale : {1.0f, 0.5f, 0.0173f, 3.7f, 1e-30f})
        for (int32_t zp : {0, 128, 255}) {
          QNode q = build("QuantizeLinear", DType::f32, DType::u8, n, scale, zp);
          NodeContext ctx{q.g, q.g.nodes[0], host_target(), 2};
          ASSERT_EQ(kc->check(ctx), "") << kc->name;
          Tensor x(DType::f32, {n});
          const std::vector<float> v = probe_values(n, seed++);
          std::memcpy(x.data<float>(), v.data(), v.size() * sizeof(float));
          Tensor want(DType::u8, {n});
          std::vector<TensorView> in = {x.view(), q.scale.view(), q.zp.view()}, ref_out = {want.view()};
          find_reference("QuantizeLinear")(q.g, q.g.nodes[0], in, ref_out);
          auto k = kc->create(ctx);
          for (int threads : {1, 2}) {
            ThreadPool pool(threads);
            Tensor got(DType::u8, {n});
            std::memset(got.data<uint8_t>(), 0xA5, static_cast<size_t>(n));
            std::vector<TensorView> out = {got.view()};
            k->run(in, out, pool);
            expect_same<uint8_t>(got, want,
                                 kc->name + " n " + std::to_string(n) + " scale " + std::to_string(scale) + " zp " +
                                     std::to_string(zp));
          }
        }
  }
}

TEST(Qu8Quantize, QuantizeWithoutZeroPoint) {
  const auto rows = host_rows("QuantizeLinear");
  if (rows.empty()) GTEST_SKIP() << "no fast QuantizeLinear row runs here";
  for (const KernelCandidate* kc : rows) {
    QNode q = build("QuantizeLinear", DType::f32, DType::u8, 50, 0.25f, 0, /*with_zp=*/false);
    NodeContext ctx{q.g, q.g.nodes[0], host_target(), 1};
    ASSERT_EQ(kc->check(ctx), "") << kc->name;
    Tensor x(DType::f32, {50});
    const std::vector<float> v = probe_values(50, 9);
    std::memcpy(x.data<float>(), v.data(), v.size() * sizeof(float));
    Tensor want(DType::u8, {50}), got(DType::u8, {50});
    std::vector<TensorView> in = {x.view(), q.scale.view(), TensorView{}}, ref_out = {want.view()}, out = {got.view()};
    find_reference("QuantizeLinear")(q.g, q.g.nodes[0], in, ref_out);
    ThreadPool pool(1);
    kc->create(ctx)->run(in, out, pool);
    expect_same<uint8_t>(got, want, kc->name + " no zero point");
  }
}

TEST(Qu8Quantize, DequantizeMatchesReference) {
  const auto rows = host_rows("DequantizeLinear");
  if (rows.empty()) GTEST_SKIP() << "no fast DequantizeLinear row runs here";
  for (const KernelCandidate* kc : rows)
    for (int64_t n : {1, 7, 8, 15, 16, 17, 33, 256, 1000, 40000})
      for (float scale : {1.0f, 0.0173f, 3.7f, 1e-38f, 3e36f})
        for (int32_t zp : {0, 128, 255}) {
          QNode q = build("DequantizeLinear", DType::u8, DType::f32, n, scale, zp);
          NodeContext ctx{q.g, q.g.nodes[0], host_target(), 2};
          ASSERT_EQ(kc->check(ctx), "") << kc->name;
          Tensor x(DType::u8, {n});
          for (int64_t i = 0; i < n; ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(i * 37 + n);
          Tensor want(DType::f32, {n});
          std::vector<TensorView> in = {x.view(), q.scale.view(), q.zp.view()}, ref_out = {want.view()};
          find_reference("DequantizeLinear")(q.g, q.g.nodes[0], in, ref_out);
          auto k = kc->create(ctx);
          for (int threads : {1, 2}) {
            ThreadPool pool(threads);
            Tensor got(DType::f32, {n});
            std::vector<TensorView> out = {got.view()};
            k->run(in, out, pool);
            expect_same<float>(got, want, kc->name + " n " + std::to_string(n) + " zp " + std::to_string(zp));
          }
        }
}

TEST(Qu8Quantize, ChecksGiveReasons) {
  Target t;
  {
    QNode q = build("QuantizeLinear", DType::f32, DType::i8, 8, 1.0f, 0, true, DType::i8);
    EXPECT_EQ(check_quantize_u8({q.g, q.g.nodes[0], t, 1}), "output dtype i8, needs u8");
  }
  {
    QNode q = build("DequantizeLinear", DType::i8, DType::f32, 8, 1.0f, 0, true, DType::i8);
    EXPECT_EQ(check_dequantize_u8({q.g, q.g.nodes[0], t, 1}), "input dtype i8, needs u8");
  }
  {
    QNode q = build("QuantizeLinear", DType::f32, DType::u8, 8, 1.0f, 0);
    Tensor per_axis(DType::f32, {2});
    q.g.nodes[0].inputs[1] = q.g.add_constant("s2", per_axis);
    EXPECT_EQ(check_quantize_u8({q.g, q.g.nodes[0], t, 1}), "scale has 2 values, needs 1 (per tensor)");
  }
}

}  // namespace
}  // namespace lowbit
