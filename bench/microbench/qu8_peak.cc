// qu8_peak: the int8 multiply-add peak of one core and how close lowbit's qu8 GEMM micro-kernels
// come to it on cache-resident panels.
//   1. peak loops (12-16 independent accumulators): vpdpbusd zmm (AVX-512 VNNI), vpdpbusd ymm
//      (AVX-VNNI) and vpmaddwd ymm (AVX2, the exact int16 path), each where the core has it,
//      as int8 GOP/s (2 ops per multiply-add);
//   2. each ISA's main tile (MR x NR) with the full requantizing epilogue, at ResNet-like K,
//      as GOP/s and % of that ISA's peak. The driver's packing and K blocking are not included:
//      compare with `lowbit bench --precision int8 --profile` for the whole-layer figure.
// Timings are the minimum over repetitions; on a shared machine run it when the load is low.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "lowbit/kernels/qu8-gemm/qu8_gemm.h"
#include "lowbit/microbench/loops.h"
#include "lowbit/target/target.h"


namespace {

using Clock = std::chrono::steady_clock;

template <class F>
double min_seconds(F&& f, int bursts = 10, int reps = 10) {
  double best = 1e30;
  for (int b = 0; b < bursts; ++b)
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      f();
      best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
  return best;
}

// MACs per iteration: instructions x lanes x multiplies per lane.
double peak_gops(int64_t (*loop)(int64_t), double macs_per_iter) {
  const int64_t iters = 1'000'000;
  volatile int64_t sink = 0;
  const double s = min_seconds([&] { sink = sink + loop(iters); });
  return static_cast<double>(iters) * macs_per_iter * 2 / s / 1e9;
}

double measure_tile(const lowbit::Qu8GemmKernels& ks, size_t kc) {
  const size_t mr = static_cast<size_t>(ks.mr), nr = static_cast<size_t>(ks.nr), kg = kc / static_cast<size_t>(ks.kg);
  std::mt19937 rng(1);
  std::vector<uint32_t> a(kg * mr);
  for (auto& v : a) v = static_cast<uint32_t>(rng());
  if (ks.widened)  // int16 words: keep products of (x - zp) and w in the exact range
    for (auto& v : a) v &= 0x00ff00ffu;
  const size_t bbytes = kg * nr * 4;
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(64, (bbytes + 63) / 64 * 64));
  for (size_t i = 0; i < bbytes; ++i) b[i] = static_cast<uint8_t>(rng() & (ks.widened && i % 2 ? 0 : 0xff));
  std::vector<float> scale(mr, 1e-4f), bias(mr, 3.0f);
  std::vector<int32_t> init(mr, 7), partial(mr * nr);
  std::vector<uint8_t> c(mr * nr);
  lowbit::Qu8GemmEpilogue e;
  e.row_init = ks.widened ? nullptr : init.data();
  e.partial = partial.data();
  e.scale = scale.data();
  e.bias = bias.data();
  e.zp_y = 3;
  e.qmin = -3;
  e.qmax = 252;
  const int calls = static_cast<int>(std::max<size_t>(1, 200'000 / kc));
  const double s = min_seconds([&] {
    for (int i = 0; i < calls; ++i) ks.main[mr](nr, kg, a.data(), b, c.data(), nr, e);
  });
  std::free(b);
  return static_cast<double>(calls) * 2.0 * static_cast<double>(mr * nr * kc) / s / 1e9;
}

}  // namespace

int main() {
  using lowbit::Feature;
  const lowbit::Target t = lowbit::host_target();
  if (!t.has(Feature::avx2) || !t.has(Feature::fma)) {
    std::printf("host lacks avx2+fma\n");
    return 0;
  }
  struct Isa {
    const char* name;
    bool present;
    int64_t (*loop)(int64_t);
    double macs_per_iter;
    // Every tile shape of the ISA, as getters: the kernel tables are built by code compiled for
    // their ISA, so a getter runs only where the core has it (calling them all up front was a
    // SIGILL on AVX2-only hosts).
    std::vector<const lowbit::Qu8GemmKernels& (*)()> tiles;
  };
  const bool vnni512 = t.has(Feature::avx512f) && t.has(Feature::avx512bw) && t.has(Feature::avx512vnni);
  const Isa isas[] = {
      {"avx512vnni (vpdpbusd zmm)", vnni512, lowbit::microbench::qu8_vpdpbusd_zmm_loop, 16 * 64,
       {[]() -> const lowbit::Qu8GemmKernels& { return lowbit::qu8_gemm_kernels_avx512vnni(); },
        []() -> const lowbit::Qu8GemmKernels& { return lowbit::qu8_gemm_kernels_avx512vnni_8x32(); },
        []() -> const lowbit::Qu8GemmKernels& { return lowbit::qu8_gemm_kernels_avx512vnni_8x48(); },
        []() -> const lowbit::Qu8GemmKernels& { return lowbit::qu8_gemm_kernels_avx512vnni_8x32(4); },
        []() -> const lowbit::Qu8GemmKernels& { return lowbit::qu8_gemm_kernels_avx512vnni_8x32(2); },
        []() -> const lowbit::Qu8GemmKernels& { return lowbit::qu8_gemm_kernels_avx512vnni_8x48(4); }}},
      {"avxvnni (vpdpbusd ymm)", t.has(Feature::avxvnni), lowbit::microbench::qu8_vpdpbusd_ymm_loop, 12 * 32,
       {[]() -> const lowbit::Qu8GemmKernels& { return lowbit::qu8_gemm_kernels_avxvnni(); }}},
      {"avx2 (vpmaddwd ymm)", true, lowbit::microbench::qu8_vpmaddwd_ymm_loop, 12 * 16,
       {[]() -> const lowbit::Qu8GemmKernels& { return lowbit::qu8_gemm_kernels_avx2(); }}},
  };
  for (const Isa& isa : isas) {
    if (!isa.present) {
      std::printf("%-28s not on this core\n", isa.name);
      continue;
    }
    const double peak = peak_gops(isa.loop, isa.macs_per_iter);
    std::printf("%-28s peak %7.1f int8 GOP/s (1 core)\n", isa.name, peak);
    for (const auto& tiles : isa.tiles) {
      const lowbit::Qu8GemmKernels& ks = tiles();
      std::printf("  qu8_gemm_%dx%d__%s, %d-bit weight codes (requantizing epilogue):\n", ks.mr, ks.nr, ks.isa,
                  ks.weight_bits);
      for (size_t kc : {64, 144, 256, 576, 1152, 2304})
        if (kc % static_cast<size_t>(ks.kg) == 0) {
          const double g = measure_tile(ks, kc);
          std::printf("    K=%-6zu %8.1f GOP/s %5.0f%%\n", kc, g, 100 * g / peak);
        }
    }
  }
  return 0;
}
