#include "lowbit/microbench/microbench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "lowbit/common/error.h"
#include "lowbit/microbench/loops.h"

namespace lowbit {
namespace {

using Clock = std::chrono::steady_clock;

// One row of the table: what an iteration of its loop does and the documented bound. The bounds
// are per core and per cycle, from the vendors' optimisation guides and uops.info's measurements;
// where parts differ the row says which it assumes.
struct PathRow {
  const char* name;
  const char* dtype;
  const char* isa;
  std::vector<Feature> features;
  const char* instructions;
  double macs_per_iter;
  double limit;  // MACs a cycle
  const char* limit_source;
  double (*loop)(int64_t);
  // Where AMD Zen 5 (family 26) does more a cycle than the parts above: its bound and source.
  double zen5_limit = 0;
  const char* zen5_source = nullptr;
};

template <auto F>
double as_double(int64_t iters) {
  return static_cast<double>(F(iters));
}

const std::vector<PathRow>& path_table() {
  using microbench::add_chain_loop;
  static const std::vector<PathRow> rows = {
      {"scalar fp32", "fp32", "baseline", {}, "mul + add (or fmadd), 8 chains", 8, 2,
       "two multiply-add pipes (Zen 3, Skylake, Neoverse N1)", as_double<microbench::scalar_f32_loop>},
      {"scalar int32", "int32", "baseline", {}, "imul/mul + add, 8 chains", 8, 1, "one integer multiplier",
       as_double<microbench::scalar_i32_loop>, 2,
       "two integer multipliers (Zen 5: 1.3 MACs a cycle measured on EPYC, past the one-multiplier bound)"},
#if defined(__x86_64__)
      {"fp32 FMA ymm", "fp32", "avx2", {Feature::avx2, Feature::fma}, "vfmadd231ps ymm x12", 96, 16,
       "2 FMA units x 8 lanes (Haswell+, Zen 2+)", as_double<microbench::f32_fma_ymm_loop>},
      {"fp32 FMA zmm", "fp32", "avx512", {Feature::avx512f}, "vfmadd231ps zmm x12", 192, 32,
       "2 x 512-bit FMA units (Xeon Gold/Platinum; 16 on one-unit parts and Zen 4)",
       as_double<microbench::f32_fma_zmm_loop>},
      {"int8 vpmaddwd (int16 pairs)", "int8", "avx2", {Feature::avx2}, "vpmaddwd + vpaddd ymm x12", 192, 32,
       "2 vpmaddwd ymm a cycle x 16 (Skylake, Zen 3)", as_double<microbench::qu8_vpmaddwd_ymm_loop>},
      {"narrow codes vpmaddubsw", "int8", "avx2", {Feature::avx2}, "vpmaddubsw + vpmaddwd(1) + vpaddd ymm x8", 256, 32,
       "2 multiply-port ops per 32 MACs, 2 ports", as_double<microbench::qu8_vpmaddubsw_ymm_loop>},
      {"4-bit unpack + vpmaddubsw", "int4", "avx2", {Feature::avx2}, "vpand/vpsrlw unpack, vpmaddubsw path, x4", 256,
       32, "as vpmaddubsw (the unpack runs on other ports)", as_double<microbench::qu4_unpack_ymm_loop>},
      {"2-bit unpack + vpmaddubsw", "int2", "avx2", {Feature::avx2}, "vpsrlw/vpand unpack x4, vpmaddubsw path, x2",
       256, 32, "as vpmaddubsw", as_double<microbench::qu2_unpack_ymm_loop>},
      {"binary vpshufb popcount", "b1", "avx2", {Feature::avx2}, "vpxor, 2 x vpshufb nibble table, vpsadbw ymm x8",
       2048, 256, "2 vpshufb a cycle per 256 bits", as_double<microbench::b1_vpshufb_ymm_loop>},
      {"binary vpopcntq zmm", "b1", "avx512popcnt", {Feature::avx512f, Feature::avx512vpopcntdq},
       "vpxorq + vpopcntq + vpaddq zmm x8", 4096, 512, "1 vpopcntq zmm a cycle (Ice Lake, Zen 4)",
       as_double<microbench::b1_vpopcntq_zmm_loop>, 1024,
       "2 vpopcntq zmm a cycle (Zen 5: 681 MACs a cycle measured on EPYC, past one a cycle)"},
      {"int8 vpdpbusd ymm", "int8", "avxvnni", {Feature::avxvnni}, "{vex} vpdpbusd ymm x12", 384, 64,
       "2 vpdpbusd ymm a cycle x 32 (Alder Lake P-core, Sapphire Rapids)", as_double<microbench::qu8_vpdpbusd_ymm_loop>},
      {"int8 vpdpbusd zmm", "int8", "avx512vnni", {Feature::avx512vnni}, "vpdpbusd zmm x16", 1024, 128,
       "2 vpdpbusd zmm a cycle x 64 (Sapphire Rapids ports 0 and 5: measured 127 MACs a cycle; 1 on Ice Lake and Zen 4)",
       as_double<microbench::qu8_vpdpbusd_zmm_loop>},
#elif defined(__aarch64__)
      {"fp32 fmla", "fp32", "neon", {Feature::neon}, "fmla .4s x12", 48, 8, "2 x 128-bit FMA pipes (Neoverse N1, A76)",
       as_double<microbench::f32_fmla_loop>},
      {"int8 smlal (int16 operands)", "int8", "neon", {Feature::neon}, "smlal + smlal2 .4s x6", 48, 8,
       "2 x 128-bit multiply-accumulate pipes", as_double<microbench::qs8_smlal_loop>},
      {"narrow codes smull + sadalp", "int8", "neon", {Feature::neon}, "smull + smull2 .8h, 2 x sadalp, x4", 64, 16,
       "2 pipes x 8 byte products (sadalp on the same pipes)", as_double<microbench::qs8_smull_sadalp_loop>},
      {"4-bit unpack + smull", "int4", "neon", {Feature::neon}, "and/ushr unpack, 2 smull paths, x2", 64, 16,
       "as smull + sadalp", as_double<microbench::qs4_unpack_loop>},
      {"2-bit unpack + smull", "int2", "neon", {Feature::neon}, "ushr/and unpack x4, 4 smull paths", 64, 16,
       "as smull + sadalp", as_double<microbench::qs2_unpack_loop>},
      {"binary cnt", "b1", "neon", {Feature::neon}, "eor + cnt .16b + uadalp x8", 1024, 256,
       "2 pipes x 128 bits", as_double<microbench::b1_cnt_loop>},
      {"int8 sdot", "int8", "neondot", {Feature::dotprod}, "sdot .4s x12", 192, 32,
       "2 sdot a cycle x 16 (Neoverse N1, A76)", as_double<microbench::qs8_sdot_loop>},
#endif
  };
  return rows;
}

// Best-of-bursts seconds of one `loop(iters)` call, with iters grown until a burst takes about
// `burst_s`: under emulation the same loop is tens of times slower.
double best_seconds(double (*loop)(int64_t), int64_t& iters, double burst_s, int bursts) {
  volatile double sink = 0;
  for (iters = 256;; iters *= 4) {
    const auto t0 = Clock::now();
    sink = sink + loop(iters);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > burst_s / 4 || iters > (int64_t{1} << 40)) {
      iters = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iters) * burst_s / std::max(s, 1e-9)));
      break;
    }
  }
  double best = 1e30;
  for (int b = 0; b < bursts; ++b) {
    const auto t0 = Clock::now();
    sink = sink + loop(iters);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// qemu-user hands the host's /proc/cpuinfo to the program it runs: AArch64 code that reads an x86
// vendor there is emulated.
std::string emulation() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, vendor, model;
  while (std::getline(f, line)) {
    if (line.rfind("vendor_id", 0) == 0 && vendor.empty()) vendor = line.substr(line.find(':') + 1);
    if (line.rfind("model name", 0) == 0 && model.empty()) model = line.substr(line.find(':') + 1);
  }
#if defined(__aarch64__)
  if (vendor.find("Intel") != std::string::npos || vendor.find("AMD") != std::string::npos)
    return "qemu (AArch64 code on an x86 host:" + model + ")";
#endif
  return "";
}

// AMD family 26 (Zen 5), from /proc/cpuinfo: its rows' bounds differ (PathRow::zen5_limit).
bool is_zen5() {
  std::ifstream f("/proc/cpuinfo");
  bool amd = false;
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("vendor_id", 0) == 0) amd = line.find("AuthenticAMD") != std::string::npos;
    if (line.rfind("cpu family", 0) == 0) return amd && std::atoi(line.substr(line.find(':') + 1).c_str()) == 26;
  }
  return false;
}

std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0 || line.rfind("CPU part", 0) == 0) {
      std::string v = line.substr(line.find(':') + 1);
      v.erase(0, v.find_first_not_of(' '));
      return v;
    }
  return "unknown";
}

}  // namespace

MicrobenchResult run_microbench(const MicrobenchOptions& o) {
  const Target& host = host_target();
  MicrobenchResult r;
  r.target = host.name, r.features = host.feature_string(), r.cpu = cpu_name(), r.emulated = emulation();
  const bool zen5 = r.emulated.empty() && is_zen5();
  const double burst = o.quick ? 0.005 : 0.02;
  const int bursts = o.quick ? 3 : 7;
  int64_t iters = 0;
  // The clock: the fastest the add chain ever ran, measured again after every path (a neighbour
  // on the other core, or a slower clock in one stretch, only ever makes it look slower).
  auto clock = [&] {
    if (!r.emulated.empty()) return;
    int64_t n = 0;
    const double s = best_seconds(as_double<microbench::add_chain_loop>, n, burst, bursts);
    r.ghz = std::max(r.ghz, 16.0 * static_cast<double>(n) / s / 1e9);
  };
  clock();
  auto wanted = [&](const std::string& isa) {
    return o.isas.empty() || std::find(o.isas.begin(), o.isas.end(), isa) != o.isas.end();
  };
  for (const PathRow& row : path_table()) {
    bool runs = wanted(row.isa);
    for (Feature f : row.features) runs &= host.has(f);
    if (!runs) continue;
    const double s = best_seconds(row.loop, iters, burst, bursts);
    clock();
    MicrobenchPath p;
    p.name = row.name, p.dtype = row.dtype, p.isa = row.isa, p.instructions = row.instructions;
    p.gops = 2 * row.macs_per_iter * static_cast<double>(iters) / s / 1e9;
    p.limit_per_cycle = row.limit, p.limit_source = row.limit_source;
    if (zen5 && row.zen5_limit > 0) p.limit_per_cycle = row.zen5_limit, p.limit_source = row.zen5_source;
    r.paths.push_back(std::move(p));
  }
  if (r.ghz > 0)
    for (MicrobenchPath& p : r.paths) {
      p.macs_per_cycle = p.gops / 2 / r.ghz;
      p.fraction = p.macs_per_cycle / p.limit_per_cycle;
    }
  auto best_of = [&](const char* dtype, bool scalar) {
    double best = 0;
    for (const MicrobenchPath& p : r.paths)
      if (p.dtype == dtype && (p.isa == "baseline") == scalar) best = std::max(best, p.gops);
    return best;
  };
  if (best_of("fp32", true) > 0) r.int_over_fp_scalar = best_of("int32", true) / best_of("fp32", true);
  if (best_of("fp32", false) > 0) r.int8_over_fp32_simd = best_of("int8", false) / best_of("fp32", false);
  if (o.bandwidth && wanted("baseline")) {
    const CacheSizes& c = host.caches;
    // Under emulation every level is capped (qemu reads 32 MB as slowly as it reads 32 KB, and a
    // full-size DRAM pass would take minutes); the L3 cap stays below the DRAM one, or the L3 pass
    // read past a buffer sized for DRAM (a 260 MB L3 under qemu: 64 MB read from 32 MB).
    const int64_t cap = r.emulated.empty() ? int64_t{64} << 20 : int64_t{16} << 20;
    std::vector<std::pair<std::string, int64_t>> levels = {{"L1", c.l1d / 2}, {"L2", std::min(c.l2 / 2, cap)}};
    if (c.l3 > 0) levels.push_back({"L3", std::min(c.l3 / 2, cap)});
    // Four times L3, within [64 MB, 256 MB] quick and [256 MB, 1 GB] full: a VM's L3 can be the
    // whole package's (an EPYC guest reads 508 MB from cpuid 0x80000006), and 4x that is 2 GB.
    const int64_t dram_floor = int64_t{o.quick ? 64 : 256} << 20;
    const int64_t dram = std::clamp<int64_t>(4 * c.l3, dram_floor, 4 * dram_floor);
    levels.push_back({"DRAM", r.emulated.empty() ? dram : 2 * cap});
    int64_t largest = 0;
    for (const auto& [level, bytes] : levels) largest = std::max(largest, bytes);
    std::unique_ptr<uint64_t[]> buf(new uint64_t[static_cast<size_t>(largest / 8)]);
    for (int64_t i = 0; i < largest / 8; ++i) buf[static_cast<size_t>(i)] = static_cast<uint64_t>(i);
    for (auto& [level, raw] : levels) {
      const int64_t bytes = std::max<int64_t>(4096, raw / 256 * 256);
      // Enough passes to read about 64 MB (16 MB quick), at least 2 for DRAM.
      const int64_t passes = std::max<int64_t>(2, (int64_t{o.quick ? 16 : 64} << 20) / bytes);
      volatile uint64_t sink = 0;
      double best = 1e30;
      for (int b = 0; b < (o.quick ? 2 : 4); ++b) {
        const auto t0 = Clock::now();
        sink = sink + microbench::read_loop(buf.get(), bytes, passes);
        best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
      }
      r.bandwidth.push_back({level, bytes, static_cast<double>(bytes) * static_cast<double>(passes) / best / 1e9});
    }
  }
  return r;
}

nlohmann::json microbench_json(const MicrobenchResult& r) {
  nlohmann::json paths = nlohmann::json::array(), bw = nlohmann::json::array();
  for (const MicrobenchPath& p : r.paths)
    paths.push_back({{"name", p.name},
                     {"dtype", p.dtype},
                     {"isa", p.isa},
                     {"instructions", p.instructions},
                     {"gops", p.gops},
                     {"macs_per_cycle", p.macs_per_cycle},
                     {"limit_per_cycle", p.limit_per_cycle},
                     {"fraction", p.fraction},
                     {"limit_source", p.limit_source}});
  for (const MicrobenchBandwidth& b : r.bandwidth) bw.push_back({{"level", b.level}, {"bytes", b.bytes}, {"gbps", b.gbps}});
  return {{"target", r.target},
          {"features", r.features},
          {"cpu", r.cpu},
          {"emulated", r.emulated.empty() ? nlohmann::json() : nlohmann::json(r.emulated)},
          {"ghz", r.ghz},
          {"paths", paths},
          {"bandwidth", bw},
          {"int_over_fp_scalar", r.int_over_fp_scalar},
          {"int8_over_fp32_simd", r.int8_over_fp32_simd}};
}

std::string microbench_text(const MicrobenchResult& r) {
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s [%s], %s\n", r.cpu.c_str(), r.features.c_str(),
                r.emulated.empty() ? "native" : ("EMULATED: " + r.emulated + "; no cycle figures, only ratios").c_str());
  s += buf;
  if (r.ghz > 0) {
    std::snprintf(buf, sizeof buf, "clock %.2f GHz (a chain of dependent adds)\n", r.ghz);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "\n%-30s %-6s %-13s %9s %9s %7s %6s  %s\n", "path", "dtype", "isa", "GOP/s", "MAC/cyc",
                "bound", "of it", "instructions");
  s += buf;
  for (const MicrobenchPath& p : r.paths) {
    char cyc[16] = "-", frac[16] = "-";
    if (p.macs_per_cycle > 0) {
      std::snprintf(cyc, sizeof cyc, "%.1f", p.macs_per_cycle);
      std::snprintf(frac, sizeof frac, "%.0f%%", 100 * p.fraction);
    }
    std::snprintf(buf, sizeof buf, "%-30s %-6s %-13s %9.1f %9s %7.0f %6s  %s\n", p.name.c_str(), p.dtype.c_str(),
                  p.isa.c_str(), p.gops, cyc, p.limit_per_cycle, frac, p.instructions.c_str());
    s += buf;
  }
  std::snprintf(buf, sizeof buf,
                "\nint32 / fp32 scalar multiply-adds: %.2fx   best int8 path / best fp32 vector path: %.2fx%s\n",
                r.int_over_fp_scalar, r.int8_over_fp32_simd,
                r.emulated.empty() ? "" : "   (emulated: the study measured 2.6-2.7x for scalar int over fp32 under QEMU TCG)");
  s += buf;
  if (!r.bandwidth.empty()) {
    s += "\nread bandwidth:";
    for (const MicrobenchBandwidth& b : r.bandwidth) {
      std::snprintf(buf, sizeof buf, "  %s %.1f GB/s (%lld KB)", b.level.c_str(), b.gbps, static_cast<long long>(b.bytes >> 10));
      s += buf;
    }
    s += "\n";
  }
  return s;
}

}  // namespace lowbit
