#pragma once
// `lowbit microbench`: the multiply-add throughput of each instruction path lowbit's kernels use
// on this core, per dtype, and read bandwidth at each cache level: what a layer can reach at best,
// and the study's "integer MACs against fp32" ratio (2.6-2.7x under QEMU TCG) for lowbit's own
// paths. Each path is a loop of independent multiply-adds in that path's instructions
// (microbench/loops.h), timed as the best of short bursts; MACs per cycle come from a chain of
// dependent one-cycle adds (the clock: its fastest run, measured again after every path), and
// each path's documented MACs per cycle is the bound its fraction is taken of. Under emulation (qemu) there are no cycles: figures are labelled so
// and only the ratios between paths mean anything.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lowbit/target/target.h"

namespace lowbit {

struct MicrobenchOptions {
  std::vector<std::string> isas;  // only paths of these ISA groups ("baseline", "avx2", "neondot", ...); empty: all
  bool quick = false;             // shorter bursts and smaller memory sweeps (the report's --quick)
  bool bandwidth = true;
};

struct MicrobenchPath {
  std::string name, dtype, isa, instructions;
  double gops = 0;            // 2 ops per multiply-add (binary: per bit, an XOR and a count)
  double macs_per_cycle = 0;  // 0 under emulation
  double limit_per_cycle = 0, fraction = 0;  // the documented bound and the fraction reached
  std::string limit_source;
};

struct MicrobenchBandwidth {
  std::string level;  // L1, L2, L3, DRAM
  int64_t bytes = 0;  // the buffer read
  double gbps = 0;
};

struct MicrobenchResult {
  std::string target, features, cpu;
  std::string emulated;  // "" natively, else what emulates this code (qemu-aarch64 on an x86 host)
  double ghz = 0;        // measured from the add chain; 0 under emulation
  std::vector<MicrobenchPath> paths;
  std::vector<MicrobenchBandwidth> bandwidth;
  // The study's ratio for lowbit's paths: scalar int32 MACs over scalar fp32 ones, and the best
  // int8 path over the best fp32 vector path.
  double int_over_fp_scalar = 0, int8_over_fp32_simd = 0;
};

// Runs the paths the host can run (host_target(): LOWBIT_ISA caps it).
MicrobenchResult run_microbench(const MicrobenchOptions& o = {});
nlohmann::json microbench_json(const MicrobenchResult& r);
// The table `lowbit microbench` prints.
std::string microbench_text(const MicrobenchResult& r);

}  // namespace lowbit
