// Same answers on every ISA: one quantized ResNet-18 produces the same quantized tensors, bit for
// bit, on every x86-64 ISA level this CPU runs (baseline, AVX2, AVX-512, VNNI, ...), at 1 and 2
// threads, and on AArch64 (NEON, dot product) in the qemu stage; its fp32 output agrees to the
// rounding of the final dequantize. The int8 kernels are exact (each one is checked byte for byte
// against the reference elsewhere); this checks the claim on a whole network, where a kernel that
// rounded a requantization differently on one ISA would show in every tensor after it.
//
// "One quantized model" must be the same model on both architectures. The quantizer is exact
// arithmetic over its inputs (scales from max |w|, IEEE divisions and roundings; the library's
// passes and quantizer are built without multiply-add contraction, src/lowbit/CMakeLists.txt), but
// its calibration runs the fp32 kernels, whose sums differ in their last bits between ISAs. The
// ranges are therefore snapped outward to a grid of 1/16 of their binade before quantizing, which
// absorbs those last bits: the quantized graph is then the same on every CPU, as its hash checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "lowbit/frontend/load_model.h"
#include "lowbit/quant/calibration.h"
#include "lowbit/quant/quantize.h"
#include "lowbit/runtime/compiled_model.h"
#include "lowbit/target/target.h"

namespace lowbit {
namespace {

// Outward to the next multiple of 2^(e-4) for a bound of binade 2^e: 16 steps per binade.
float snap_out(float v, bool up) {
  if (v == 0.0f || !std::isfinite(v)) return v;
  int e = 0;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  const float step = std::ldexp(1.0f, e - 5);
  return (up ? std::ceil(v / step) : std::floor(v / step)) * step;
}

// An input with exact values: k / 64 for k in [-160, 160] from an integer sequence, the same bits
// on every CPU (synthetic_inputs' log and cos are libm's, which need not round alike everywhere).
Tensor exact_input(const Shape& shape) {
  Tensor t(DType::f32, shape);
  uint64_t s = 12345;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    t.data<float>()[i] = static_cast<float>(static_cast<int64_t>((s >> 33) % 321) - 160) / 64.0f;
  }
  return t;
}

uint64_t graph_hash(const Graph& g) {
  uint64_t h = 0;
  for (const Value& v : g.values) {
    if (v.constant) h = h * 31 + content_hash(v.constant->raw(), static_cast<size_t>(v.constant->nbytes()));
    if (v.quant) {
      h = h * 31 + content_hash(v.quant->scale.data(), v.quant->scale.size() * sizeof(float));
      h = h * 31 + content_hash(v.quant->zero_point.data(), v.quant->zero_point.size() * sizeof(int32_t));
    }
  }
  return h;
}

struct Answers {
  std::map<std::string, uint64_t> quantized;  // value name -> hash of its bytes (every non-f32 tensor)
  Tensor output;
};

Answers run_on(const Graph& q, const Target& t, int threads, const Tensor& x) {
  CompileOptions o;
  o.target = t;
  o.threads = threads;
  auto m = CompiledModel::compile(q, o);
  Answers a;
  const Graph& g = m->graph();
  a.output = m->run_observed({x}, [&](ValueId v, const TensorView& view) {
    if (view.dtype == DType::f32) return;
    a.quantized[g.value(v).name] = content_hash(view.data, static_cast<size_t>(view.nbytes()));
  })[0];
  return a;
}

// The ISA levels of this architecture that this CPU runs: none, then its named targets.
std::vector<Target> levels_here() {
  const Target host = host_target();
  const std::vector<std::string> names = host.arch == Arch::x86_64
                                             ? std::vector<std::string>{"x86-64", "x86-64-v3",
                                                                        "skylake-avx512", "cascadelake", "sapphirerapids"}
                                             : std::vector<std::string>{"cortex-a72", "neoverse-n1", "armv8.6-a"};
  // Below every named target: no SIMD feature at all (the portable and reference kernels).
  Target generic = parse_target(names.front());
  generic.name = "generic";
  generic.features = 0;
  std::vector<Target> v = {generic};
  for (const std::string& n : names) {
    Target t = parse_target(n);
    if (host.missing(t).empty()) v.push_back(t);
  }
  return v;
}

TEST(SameAnswers, Resnet18QuantizedTensorsAreBitIdenticalOnEveryIsa) {
  CompileOptions fo;
  fo.threads = 1;
  auto fp32 = CompiledModel::compile(load_model("resnet18", {{"input", {1, 3, 64, 64}}}), fo);
  QuantizeOptions qo;
  qo.synthetic_samples = 2;
  qo.weight_scale = WeightScale::max;
  std::vector<Range> ranges = calibrate_model(*fp32, qo);
  for (Range& r : ranges) {
    r.lo = snap_out(r.lo, false);
    r.hi = snap_out(r.hi, true);
  }
  const Graph q = quantize_graph(fp32->graph(), ranges, qo);
  // The quantized model itself: the same bytes on every CPU (x86-64 with AVX-512 computed it).
  EXPECT_EQ(graph_hash(q), 0x777b12cb13426fc1ull) << "quantized graph 0x" << std::hex << graph_hash(q);

  const Tensor x = exact_input({1, 3, 64, 64});
  const std::vector<Target> levels = levels_here();
  ASSERT_FALSE(levels.empty());
  const Answers first = run_on(q, levels[0], 1, x);
  ASSERT_GE(first.quantized.size(), 20u);  // every conv's output, the pools', the adds'
  uint64_t all = 0;
  for (const auto& [name, h] : first.quantized) all = all * 31 + h;
  // What x86-64 computed; the AArch64 stage checks the same value.
  EXPECT_EQ(all, 0x11560f34a0f73345ull) << "quantized tensors 0x" << std::hex << all;
  std::string ran;
  for (const Target& t : levels) ran += " " + t.name;
  std::printf("ISA levels compared:%s\n", ran.c_str());
  for (const Target& t : levels)
    for (int threads : {1, 2}) {
      SCOPED_TRACE(t.name + " threads " + std::to_string(threads));
      const Answers a = run_on(q, t, threads, x);
      for (const auto& [name, h] : first.quantized) {
        auto it = a.quantized.find(name);
        if (it == a.quantized.end()) continue;  // fused away on this target
        EXPECT_EQ(it->second, h) << name << " differs from " << levels[0].name;
      }
      // The fp32 output is the final DequantizeLinear of equal codes: equal to the last bit.
      ASSERT_EQ(a.output.numel(), first.output.numel());
      EXPECT_EQ(std::memcmp(a.output.raw(), first.output.raw(), static_cast<size_t>(a.output.nbytes())), 0);
    }
}

}  // namespace
}  // namespace lowbit
