// qb1_layers [--threads N] [--all]: binary (b1 x b1) conv against int8 on ResNet-18's 3x3 layers
// (--all: also few-channel and pointwise shapes, outside the total), batch 1,
// side by side in one run. For each layer:
//   int8:   a one-Conv graph quantized by lowbit (int8, synthetic calibration) and compiled for the
//           host; the QConv node's time from run_profiled (the kernel the dispatch table chose,
//           its im2col, GEMM and requantizing epilogue);
//   binary: qb1_conv2d with every kernel set the host runs, on activations already bit-packed (as
//           they stay between binary layers), im2col of words, XOR-popcount GEMM and the exact
//           zero-padding correction, writing int32. The output transform a graph adds (threshold
//           compare to bits, or the int8 epilogue) is not included yet: the binary op is not in
//           the graph (issue 10).
// Timings are the minimum over repetitions; on a shared machine run it when the load is low.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lowbit/ir/graph.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/kernels/qb1-gemm/qb1_gemm.h"
#include "lowbit/quant/quantize.h"
#include "lowbit/runtime/compiled_model.h"
#include "lowbit/runtime/thread_pool.h"

namespace {

using namespace lowbit;
using Clock = std::chrono::steady_clock;

template <class F>
double min_ms(F&& f, double min_total_s = 0.3) {
  double best = 1e30, total = 0;
  for (int r = 0; r < 3 || total < min_total_s; ++r) {
    auto t0 = Clock::now();
    f();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
    if (r > 2000) break;
  }
  return best * 1e3;
}

struct Layer {
  const char* name;
  int64_t C, H, M, K, S, P;
};

// ResNet-18's 3x3 convs (the first of each stage strided); the 7x7 stem stays 8-bit.
const Layer kLayers[] = {
    {"l1 3x3 64 @56", 64, 56, 64, 3, 1, 1},         {"l2 3x3/2 64>128 @56", 64, 56, 128, 3, 2, 1},
    {"l2 3x3 128 @28", 128, 28, 128, 3, 1, 1},      {"l3 3x3/2 128>256 @28", 128, 28, 256, 3, 2, 1},
    {"l3 3x3 256 @14", 256, 14, 256, 3, 1, 1},      {"l4 3x3/2 256>512 @14", 256, 14, 512, 3, 2, 1},
    {"l4 3x3 512 @7", 512, 7, 512, 3, 1, 1},
};
// Few input channels (the guard's question: where does one mostly empty word per tap stop paying?)
// and ResNet-50's pointwise shapes.
const Layer kSmallC[] = {
    {"3x3 8>64 @56", 8, 56, 64, 3, 1, 1},    {"3x3 16>64 @56", 16, 56, 64, 3, 1, 1},
    {"3x3 32>64 @56", 32, 56, 64, 3, 1, 1},  {"1x1 64>256 @56", 64, 56, 256, 1, 1, 0},
    {"1x1 256>64 @56", 256, 56, 64, 1, 1, 0}, {"1x1 1024>256 @14", 1024, 14, 256, 1, 1, 0},
};

double int8_node_ms(const Layer& L, int threads, std::string& kernel) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, 1.0f);
  Graph g;
  ValueId x = g.add_value("x", DType::f32, {1, L.C, L.H, L.H}, true);
  g.inputs.push_back(x);
  Tensor wt(DType::f32, {L.M, L.C, L.K, L.K});
  for (int64_t i = 0; i < wt.numel(); ++i) wt.data<float>()[i] = d(rng) * 0.05f;
  ValueId w = g.add_constant("w", wt);
  ValueId y = g.add_value("y");
  Attributes a;
  a.set("strides", std::vector<int64_t>{L.S, L.S});
  a.set("pads", std::vector<int64_t>{L.P, L.P, L.P, L.P});
  g.add_node("Conv", "conv", {x, w}, {y}, a);
  g.outputs = {y};
  validate(g);
  CompileOptions o;
  o.threads = threads;
  auto fp32 = CompiledModel::compile(g, o);
  QuantizeOptions q;
  q.synthetic_samples = 2;
  auto m = CompiledModel::compile(quantize_model(*fp32, q), o);
  std::vector<Tensor> in = {Tensor(DType::f32, {1, L.C, L.H, L.H})};
  for (int64_t i = 0; i < in[0].numel(); ++i) in[0].data<float>()[i] = d(rng);
  NodeId qconv = -1;
  for (const Step& s : m->steps())
    if (m->graph().nodes[static_cast<size_t>(s.node)].op == "QConv") qconv = s.node, kernel = s.choice.chosen->name;
  double best = 1e30, total = 0;
  std::vector<LayerTiming> t;
  for (int r = 0; r < 5 || total < 300; ++r) {
    t.clear();
    m->run_profiled(in, t);
    for (const LayerTiming& lt : t)
      if (lt.node == qconv) best = std::min(best, lt.ms), total += lt.ms;
    if (r > 2000) break;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
  const Target host = host_target();
  std::vector<const Qb1GemmKernels*> sets;
  for (const Qb1GemmKernels* k : qb1_gemm_kernel_sets())
    if (k->runs_on(host)) sets.push_back(k);
  std::printf("batch 1, %d thread(s); ms per layer, minimum over repetitions; x = int8 / binary\n", threads);
  std::printf("%-22s %9s", "layer", "int8 ms");
  for (const Qb1GemmKernels* k : sets) std::printf(" %26s", k->name);
  std::printf("  int8 kernel\n");
  std::vector<double> sum(sets.size() + 1, 0.0);
  ThreadPool pool(threads);
  std::vector<Layer> layers(std::begin(kLayers), std::end(kLayers));
  const size_t n3x3 = layers.size();
  if (argc > 1 && !std::strcmp(argv[argc - 1], "--all")) layers.insert(layers.end(), std::begin(kSmallC), std::end(kSmallC));
  for (size_t li = 0; li < layers.size(); ++li) {
    const Layer& L = layers[li];
    std::string kernel;
    const double i8 = int8_node_ms(L, threads, kernel);
    if (li < n3x3) sum[0] += i8;
    std::printf("%-22s %9.3f", L.name, i8);
    Qb1ConvShape s;
    s.C = L.C, s.H = s.W = L.H, s.M = L.M, s.KH = s.KW = L.K, s.SH = s.SW = L.S;
    s.PT = s.PL = s.PB = s.PR = L.P;
    std::mt19937 rng(3);
    std::vector<float> x(static_cast<size_t>(L.C * L.H * L.H)), w(static_cast<size_t>(L.M * L.C * L.K * L.K));
    for (float& v : x) v = rng() & 1 ? 1.0f : -1.0f;
    for (float& v : w) v = rng() & 1 ? 1.0f : -1.0f;
    const std::vector<uint64_t> xb = pack_b1_nchw(x.data(), s.C, s.H, s.W);
    std::vector<int32_t> out(static_cast<size_t>(s.M * s.OH() * s.OW()));
    const int64_t P = s.OH() * s.OW();
    for (size_t i = 0; i < sets.size(); ++i) {
      const Qb1PackedWeights pw = pack_b1_weights(s, w.data(), *sets[i]);
      // Threads take contiguous pixel ranges in multiples of the panel width.
      const int64_t nr = sets[i]->nr, panels = (P + nr - 1) / nr;
      const double ms = min_ms([&] {
        pool.parallel_for(threads, [&](int64_t t, int) {
          qb1_conv2d(*sets[i], pw, xb.data(), B1Padding::zero, out.data(), panels * t / threads * nr,
                     panels * (t + 1) / threads * nr);
        });
      });
      if (li < n3x3) sum[i + 1] += ms;
      std::printf(" %17.3f (%5.1fx)", ms, i8 / ms);
    }
    std::printf("  %s\n", kernel.c_str());
  }
  std::printf("%-22s %9.3f", "all 3x3 (one each)", sum[0]);
  for (size_t i = 0; i < sets.size(); ++i) std::printf(" %17.3f (%5.1fx)", sum[i + 1], sum[0] / sum[i + 1]);
  std::printf("\n");
  return 0;
}
