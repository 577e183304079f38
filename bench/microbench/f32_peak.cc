// f32_peak [--layers [--cold]] [--threads N]
//   1. fp32 FMA peak of one core (12 independent FMA chains): zmm when the core has AVX-512
//      (printed first: the core's peak), and ymm.
//   2. f32_gemm_12x32__avx512 and f32_gemm_6x16__avx2 on cache-resident panels at ResNet-like K,
//      as GFLOP/s and % of the peak of their vector width.
//   3. with --layers: every distinct ResNet-50 conv layer (batch 1) through the dispatch
//      table's best candidate, 1 and N threads, plus the count-weighted total. With --cold, each
//      run uses another of enough kernel copies that the packed weights come from memory, as in a
//      whole model (ResNet-50 streams 100 MB of weights per inference), not from cache.
// Timings are the minimum over repetitions; on a shared machine run it when the load is low.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lowbit/dispatch/registry.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/kernels/f32-gemm/f32_gemm.h"
#include "lowbit/microbench/loops.h"
#include "lowbit/runtime/thread_pool.h"


namespace {

using Clock = std::chrono::steady_clock;

template <class F>
double min_seconds(F&& f, int reps, double min_total = 0.2) {
  double best = 1e30, total = 0;
  for (int r = 0; r < reps || total < min_total; ++r) {
    auto t0 = Clock::now();
    f();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
    if (r > 1000) break;
  }
  return best;
}

// Best of several short bursts: on a shared machine a single long run mostly measures the
// neighbours.
double measure_peak(bool zmm) {
  const int64_t iters = 2'000'000;
  volatile float sink = 0;
  double s = 1e30;
  for (int burst = 0; burst < 10; ++burst)
    s = std::min(s, min_seconds(
                        [&] { sink = sink + (zmm ? lowbit::microbench::f32_fma_zmm_loop : lowbit::microbench::f32_fma_ymm_loop)(iters); },
                        10, 0.02));
  return static_cast<double>(iters) * 12 * (zmm ? 16 : 8) * 2 / s / 1e9;
}

double measure_ukernel(lowbit::F32GemmUkernel uk, size_t mr, size_t nr, size_t kc) {
  std::vector<float, std::allocator<float>> a(kc * mr + 16);
  float* b = static_cast<float*>(std::aligned_alloc(64, (kc * nr * sizeof(float) + 63) / 64 * 64));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto& v : a) v = d(rng);
  for (size_t i = 0; i < kc * nr; ++i) b[i] = d(rng);
  alignas(64) float c[16 * 32];
  lowbit::F32GemmEpilogue e;
  const int calls = static_cast<int>(std::max<size_t>(1, 400'000 / kc));
  double s = 1e30;
  for (int burst = 0; burst < 10; ++burst)
    s = std::min(s, min_seconds(
                        [&] {
                          for (int i = 0; i < calls; ++i) {
                            e.init = i ? c : nullptr;
                            e.ld_init = nr;
                            uk(nr, kc, a.data(), b, c, nr, e);
                          }
                        },
                        10, 0.02));
  std::free(b);
  return static_cast<double>(calls) * 2.0 * static_cast<double>(mr * nr * kc) / s / 1e9;
}

struct Layer {
  const char* name;
  int count;  // occurrences in ResNet-50
  int64_t C, H, M, K, S, P;
};

// torchvision ResNet-50 (v1.5: stride on the 3x3), batch 1, 224x224.
const Layer kResNet50[] = {
    {"conv1 7x7/2", 1, 3, 224, 64, 7, 2, 3},
    {"l1 1x1 64>64", 1, 64, 56, 64, 1, 1, 0},
    {"l1 3x3 64", 3, 64, 56, 64, 3, 1, 1},
    {"l1 1x1 64>256", 4, 64, 56, 256, 1, 1, 0},  // 3 expansions + downsample
    {"l1 1x1 256>64", 2, 256, 56, 64, 1, 1, 0},
    {"l2 1x1 256>128", 1, 256, 56, 128, 1, 1, 0},
    {"l2 3x3/2 128", 1, 128, 56, 128, 3, 2, 1},
    {"l2 ds 1x1/2 256>512", 1, 256, 56, 512, 1, 2, 0},
    {"l2 1x1 128>512", 4, 128, 28, 512, 1, 1, 0},
    {"l2 1x1 512>128", 3, 512, 28, 128, 1, 1, 0},
    {"l2 3x3 128", 3, 128, 28, 128, 3, 1, 1},
    {"l3 1x1 512>256", 1, 512, 28, 256, 1, 1, 0},
    {"l3 3x3/2 256", 1, 256, 28, 256, 3, 2, 1},
    {"l3 ds 1x1/2 512>1024", 1, 512, 28, 1024, 1, 2, 0},
    {"l3 1x1 256>1024", 6, 256, 14, 1024, 1, 1, 0},
    {"l3 1x1 1024>256", 5, 1024, 14, 256, 1, 1, 0},
    {"l3 3x3 256", 5, 256, 14, 256, 3, 1, 1},
    {"l4 1x1 1024>512", 1, 1024, 14, 512, 1, 1, 0},
    {"l4 3x3/2 512", 1, 512, 14, 512, 3, 2, 1},
    {"l4 ds 1x1/2 1024>2048", 1, 1024, 14, 2048, 1, 2, 0},
    {"l4 1x1 512>2048", 3, 512, 7, 2048, 1, 1, 0},
    {"l4 1x1 2048>512", 2, 2048, 7, 512, 1, 1, 0},
    {"l4 3x3 512", 2, 512, 7, 512, 3, 1, 1},
};

void bench_layers(int threads, bool cold) {
  using namespace lowbit;
  const Target target = host_target();
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> d(-1, 1);
  auto random = [&](Shape s) {
    Tensor t(DType::f32, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng) * 0.1f;
    return t;
  };
  ThreadPool pool1(1), pooln(threads);
  double total1 = 0, totaln = 0, flops_total = 0;
  std::printf("\n%-24s %5s %9s %8s %9s %8s  %s\n", "layer", "count", "ms(1T)", "GF/s",
              "ms("
              "N"
              "T)",
              "GF/s", "kernel");
  for (const Layer& L : kResNet50) {
    Graph g;
    ValueId x = g.add_value("x", DType::f32, {1, L.C, L.H, L.H}, true);
    g.inputs.push_back(x);
    ValueId w = g.add_constant("w", random({L.M, L.C, L.K, L.K}));
    ValueId b = g.add_constant("b", random({L.M}));
    ValueId y = g.add_value("y");
    Attributes a;
    a.set("strides", std::vector<int64_t>{L.S, L.S});
    a.set("pads", std::vector<int64_t>{L.P, L.P, L.P, L.P});
    a.set("act_min", 0.0f);
    g.add_node("Conv", "conv", {x, w, b}, {y}, a);
    g.outputs = {y};
    validate(g);
    NodeContext ctx{g, g.nodes[0], target, threads};
    Choice choice = select_kernel(ctx);
    std::vector<std::unique_ptr<Kernel>> ks;
    ks.push_back(choice.chosen->create(ctx));
    const int64_t wbytes = std::max<int64_t>(1, ks[0]->packed_weight_bytes());
    const int copies = cold ? static_cast<int>(std::clamp<int64_t>((96 << 20) / wbytes, 2, 64)) : 1;
    while (static_cast<int>(ks.size()) < copies) ks.push_back(choice.chosen->create(ctx));
    size_t next = 0;
    Tensor xt = random({1, L.C, L.H, L.H});
    Tensor yt(DType::f32, g.value(y).shape);
    std::vector<TensorView> in = {xt.view(), g.constant(w)->view(), g.constant(b)->view()};
    std::vector<TensorView> out = {yt.view()};
    const double flops = 2.0 * static_cast<double>(num_elements(g.value(y).shape)) * L.C * L.K * L.K;
    const int reps = std::max(5, 2 * copies);
    double s1 = min_seconds([&] { ks[next++ % ks.size()]->run(in, out, pool1); }, reps);
    double sn = threads == 1 ? s1 : min_seconds([&] { ks[next++ % ks.size()]->run(in, out, pooln); }, reps);
    std::printf("%-24s %5d %9.3f %8.1f %9.3f %8.1f  %s\n", L.name, L.count, s1 * 1e3, flops / s1 / 1e9, sn * 1e3,
                flops / sn / 1e9, choice.chosen->name.c_str());
    total1 += L.count * s1;
    totaln += L.count * sn;
    flops_total += L.count * flops;
  }
  std::printf("%-24s %5s %9.2f %8.1f %9.2f %8.1f\n", "all convs", "", total1 * 1e3, flops_total / total1 / 1e9,
              totaln * 1e3, flops_total / totaln / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  bool layers = false, cold = false;
  int threads = 2;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--layers"))
      layers = true;
    else if (!std::strcmp(argv[i], "--cold"))
      cold = true;
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
  }
  const lowbit::Target t = lowbit::host_target();
  if (!t.has(lowbit::Feature::avx2) || !t.has(lowbit::Feature::fma)) {
    std::printf("host lacks avx2+fma\n");
    return 0;
  }
  const bool zmm = t.has(lowbit::Feature::avx512f) && t.has(lowbit::Feature::avx512bw);
  struct Micro {
    const char* name;
    lowbit::F32GemmUkernel uk;
    size_t mr, nr;
    bool zmm;
  };
  std::vector<Micro> micros = {{"f32_gemm_6x16__avx2", lowbit::f32_gemm_6x16__avx2, 6, 16, false}};
  if (zmm) micros.insert(micros.begin(), {"f32_gemm_12x32__avx512", lowbit::f32_gemm_12x32__avx512, 12, 32, true});
  double peak_zmm = zmm ? measure_peak(true) : 0, peak_ymm = measure_peak(false);
  std::vector<std::vector<std::pair<size_t, double>>> uk(micros.size());
  for (size_t m = 0; m < micros.size(); ++m)
    for (size_t kc : {64, 147, 256, 384, 576, 1024})
      uk[m].push_back({kc, measure_ukernel(micros[m].uk, micros[m].mr, micros[m].nr, kc)});
  if (zmm) peak_zmm = std::max(peak_zmm, measure_peak(true));
  peak_ymm = std::max(peak_ymm, measure_peak(false));
  if (zmm) std::printf("fp32 FMA peak (1 core, zmm): %.1f GFLOP/s\n", peak_zmm);
  std::printf("fp32 FMA peak (1 core, ymm): %.1f GFLOP/s\n", peak_ymm);
  for (size_t m = 0; m < micros.size(); ++m) {
    const double peak = micros[m].zmm ? peak_zmm : peak_ymm;
    std::printf("\n%-28s %8s %8s\n", micros[m].name, "GFLOP/s", "of peak");
    for (auto [kc, gf] : uk[m]) std::printf("  kc=%-23zu %8.1f %7.0f%%\n", kc, gf, 100 * gf / peak);
  }
  if (layers) bench_layers(threads, cold);
  return 0;
}
