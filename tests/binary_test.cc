// Binary (b1) conv kernels: every kernel set of this build against the oracle (qb1_test_support.h),
// the packing round trip and the shape checks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "lowbit/common/error.h"
#include "lowbit/frontend/zoo/zoo.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/ir/codes.h"
#include "lowbit/quant/guard.h"
#include "lowbit/quant/precision.h"
#include "lowbit/operators/binary_conv2d.h"
#include "lowbit/target/target.h"
#include "qb1_test_support.h"
#include "qu8_test_support.h"

namespace lowbit {
namespace {

bool host_runs(const Qb1GemmKernels& k) { return k.runs_on(host_target()); }

// Iterates over the kernel list, so that a new set cannot ship untested: the ones this CPU lacks
// are named in the output (AVX-512 VPOPCNTDQ runs through SIMDe in lowbit_simde_tests, NEON under
// qemu).
TEST(BinaryKernels, EverySetMatchesTheOracle) {
  int ran = 0;
  for (const Qb1GemmKernels* k : qb1_gemm_kernel_sets()) {
    if (!host_runs(*k)) {
      std::printf("  %s: this CPU lacks its features, not run here\n", k->name);
      continue;
    }
    uint32_t seed = 1;
    for (const qb1test::Case& c : qb1test::cases(/*big=*/true)) qb1test::expect_exact(*k, c, seed++);
    ++ran;
  }
  EXPECT_GE(ran, 2);  // the portable set and at least one fast one on every CPU lowbit targets
}

// Threads split the output pixels: any split gives the same bytes.
TEST(BinaryKernels, PixelSplitsGiveTheSameResult) {
  const Qb1GemmKernels& k = qb1_gemm_kernels_for(host_target());
  uint32_t seed = 100;
  for (const qb1test::Case& c : qb1test::cases(/*big=*/false)) qb1test::expect_exact(k, c, seed++, /*splits=*/3);
}

TEST(BinaryKernels, PackingRoundTrip) {
  // 0 and -0 count as +1 (sign(0) = +1); tail bits past C stay 0.
  const int64_t C = 67, H = 2, W = 3;
  std::vector<float> x(static_cast<size_t>(C * H * W));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 3 == 0) ? -0.5f : (i % 3 == 1) ? 2.0f : (i % 2 ? 0.0f : -0.0f);
  const std::vector<uint64_t> b = pack_b1_nchw(x.data(), C, H, W);
  ASSERT_EQ(b.size(), static_cast<size_t>(H * W * 2));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < H * W; ++i) {
      const bool bit = (b[static_cast<size_t>(i * 2 + c / 64)] >> (c % 64)) & 1;
      EXPECT_EQ(bit, x[static_cast<size_t>(c * H * W + i)] < 0.0f) << c << "," << i;
    }
  for (int64_t i = 0; i < H * W; ++i) EXPECT_EQ(b[static_cast<size_t>(i * 2 + 1)] >> (C - 64), 0u);
}

TEST(BinaryKernels, ShapesTheKernelsCannotTakeAreRefusedByReason) {
  Qb1ConvShape s = qb1test::shape(8, 2, 2, 4, 3, 1, 0);
  EXPECT_NE(check_qb1_conv_shape(s), "");  // 3x3 does not fit 2x2 unpadded
  s = qb1test::shape(8, 4, 4, 4, 3, 0, 1);
  EXPECT_NE(check_qb1_conv_shape(s), "");  // stride 0
  std::vector<float> w(8 * 4 * 9, 1.0f);
  try {
    pack_b1_weights(s, w.data(), qb1_gemm_kernels_for(host_target()));
    ADD_FAILURE() << "stride 0 packed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stride"), std::string::npos) << e.what();
  }
}

// ---- w1a1 end to end: precision, codes, weights, the quantizer and the dispatch table ----

TEST(Binary, PrecisionAliasesAndOneSidedWidthsRefused) {
  for (const char* name : {"w1a1", "binary", "int1"}) {
    const Precision p = parse_precision(name);
    EXPECT_EQ(p.weight, DType::b1) << name;
    EXPECT_EQ(p.act, DType::u1) << name;
    EXPECT_EQ(p.name(), "w1a1");
    EXPECT_TRUE(p.subbyte());
  }
  for (const char* bad : {"w1a8", "w8a1", "w1a4"}) {
    try {
      parse_precision(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("w1a1 only")) << bad;
    }
  }
}

TEST(Binary, B1CodesArePlusMinusOneAndZeroIsRefused) {
  Tensor t(DType::b1, {70});
  for (int64_t i = 0; i < 70; ++i) store_code(t.raw(), DType::b1, i, i % 3 ? 1 : -1);
  for (int64_t i = 0; i < 70; ++i) EXPECT_EQ(load_code(t.raw(), DType::b1, i), i % 3 ? 1 : -1) << i;
  EXPECT_EQ(t.nbytes(), 9);  // 70 bits
  const Tensor i8 = convert_codes(t, DType::i8);
  EXPECT_EQ(i8.data<int8_t>()[0], -1);
  EXPECT_EQ(i8.data<int8_t>()[1], 1);
  Tensor zero(DType::i8, {2});  // 0 is not a b1 code
  EXPECT_THROW(convert_codes(zero, DType::b1), Error);
}

TEST(Binary, WeightsAreSignsTimesTheChannelMeanMagnitude) {
  Tensor w(DType::f32, {2, 4});
  const float v[] = {0.5f, -1.5f, 0.0f, 2.0f, -0.25f, -0.25f, -0.25f, -0.25f};
  std::memcpy(w.raw(), v, sizeof v);
  QuantParams q;
  const Tensor b = quantize_weights(w, DType::b1, WeightScale::automatic, DType::b1, q);
  EXPECT_EQ(b.dtype(), DType::b1);
  ASSERT_EQ(q.scale.size(), 2u);
  EXPECT_FLOAT_EQ(q.scale[0], 1.0f);  // (0.5 + 1.5 + 0 + 2) / 4
  EXPECT_FLOAT_EQ(q.scale[1], 0.25f);
  const int expect[] = {1, -1, 1, 1, -1, -1, -1, -1};  // 0 counts as +1
  for (int i = 0; i < 8; ++i) EXPECT_EQ(load_code(b.raw(), DType::b1, i), expect[i]) << i;
}

// The guard's binary rule: few input channels leave the node on the int8 kernel, with the
// measured reason, and the sub-byte report says so.
TEST(Binary, FewInputChannelsStayOnTheInt8KernelByMeasuredReason) {
  for (int64_t C : {16, 32}) {
    qu8test::ConvCase c;
    c.C = C, c.M = 8, c.H = c.W = 6, c.KH = c.KW = 3, c.pads = {1, 1, 1, 1};
    qu8test::Built b = qu8test::build_qconv(c);
    Graph& g = b.g;
    Node& n = g.nodes[static_cast<size_t>(b.node)];
    Value& w = g.value(n.inputs[1]);
    Tensor wb(DType::b1, w.shape);
    for (int64_t i = 0; i < wb.numel(); ++i) store_code(wb.raw(), DType::b1, i, i % 3 ? 1 : -1);
    w.dtype = DType::b1, w.constant = wb, w.quant->code = DType::b1, w.quant->narrow = false;
    Value& x = g.value(n.inputs[0]);
    x.quant->code = DType::u1, x.quant->zero_point[0] = 0;
    NodeContext ctx{g, n, host_target(), 1};
    const std::string r = check_qconv2d_qu1_qb1w_xnor(ctx);
    if (C < 32) {
      EXPECT_THAT(r, ::testing::HasSubstr("C = 16 input channels (< 32)"));
      EXPECT_THAT(r, ::testing::HasSubstr("measured"));
    } else {
      EXPECT_EQ(r, "");
    }
  }
}

namespace {
int binary_steps(const CompiledModel& m) {
  int n = 0;
  for (const Step& s : m.steps()) n += s.choice.chosen->name.starts_with("qu1-qb1w-");
  return n;
}
[[maybe_unused]] bool same_outputs(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].nbytes() != b[i].nbytes() || std::memcmp(a[i].raw(), b[i].raw(), static_cast<size_t>(a[i].nbytes())))
      return false;
  return true;
}
}  // namespace

// ResNet-18 at w1a1: packed b1 weights, the binary rows on every conv that has u1 inputs, and the
// same bytes from every binary kernel set (the host's fastest against the portable one through
// the sse41-only target) and from logical storage.
TEST(Binary, Resnet18W1a1RunsOnTheBinaryRowsAndEverySetAgrees) {
  CompileOptions o;
  o.threads = 2;
  auto fp32 = CompiledModel::compile(build_zoo_model("resnet18"), o);
  QuantizeOptions q;
  q.synthetic_samples = 2;
  q.precision = parse_precision("w1a1");
  const std::vector<Range> ranges = calibrate_model(*fp32, q);
  QuantizedBuild native = build_quantized(*fp32, ranges, o, q, SlowPolicy::fp32);
  int b1 = 0;
  for (const Value& v : native.model->graph().values) b1 += v.constant && v.dtype == DType::b1;
  EXPECT_EQ(b1, 19);  // 20 convs, less the 8-bit stem
  // layer4.1.conv1 reads layer4.0's output, which the last block's residual (feeding the 8-bit
  // classifier) needs at 8 bits: its input is u8, so it runs the int8 kernel and is reported.
  EXPECT_EQ(binary_steps(*native.model), 18);
  ASSERT_EQ(native.subbyte_on_int8.size(), 1u);
  EXPECT_EQ(native.subbyte_on_int8[0].node, "layer4.1.conv1");
  const std::vector<Tensor> x = synthetic_inputs(fp32->graph(), 99);
  const std::vector<Tensor> y = native.model->run(x);

#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)  // sanitizers: 3.6 min for the two extra builds
  q.mode = StorageMode::logical;
  QuantizedBuild logical = build_quantized(*fp32, ranges, o, q, SlowPolicy::fp32);
  EXPECT_EQ(binary_steps(*logical.model), 18);
  EXPECT_TRUE(same_outputs(logical.model->run(x), y));

#if defined(__x86_64__)
  CompileOptions portable = o;
  portable.target = parse_target("x86-64");  // sse41: the portable binary set, reference int8
  q.mode = StorageMode::native;
  QuantizedBuild p = build_quantized(*fp32, ranges, portable, q, SlowPolicy::allow);
  int scalar = 0;
  for (const Step& s : p.model->steps()) scalar += s.choice.chosen->name == "qu1-qb1w-conv2d-xnor-2x4-scalar";
  EXPECT_EQ(scalar, 18);
  EXPECT_TRUE(same_outputs(p.model->run(x), y));
#endif
#endif
  EXPECT_FALSE(y.empty());
}

}  // namespace
}  // namespace lowbit
