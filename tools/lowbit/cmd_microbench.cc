// lowbit microbench: multiply-add throughput per dtype and instruction path on this core, and read
// bandwidth per cache level (microbench/microbench.h).
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli.h"
#include "lowbit/common/error.h"
#include "lowbit/microbench/microbench.h"

namespace lowbit::cli {

void register_microbench(CLI::App& app) {
  struct Opts {
    std::string isa, json;
    bool quick = false, no_bandwidth = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "microbench", "multiply-add throughput per dtype and instruction path on this core, and read bandwidth");
  cmd->add_option("--isa", o->isa,
                  "only these paths: baseline, avx2, avx512, avx512popcnt, avxvnni, avx512vnni, neon, neondot "
                  "(comma-separated; LOWBIT_ISA caps what the host offers)");
  cmd->add_option("--json", o->json, "also write the results as JSON to this file");
  cmd->add_flag("--quick", o->quick, "shorter bursts and memory sweeps");
  cmd->add_flag("--no-bandwidth", o->no_bandwidth, "leave out the read-bandwidth sweep");
  cmd->callback([o] {
    MicrobenchOptions m;
    m.quick = o->quick;
    m.bandwidth = !o->no_bandwidth;
    std::stringstream list(o->isa);
    for (std::string s; std::getline(list, s, ',');)
      if (!s.empty()) m.isas.push_back(s);
    const MicrobenchResult r = run_microbench(m);
    if (r.paths.empty()) throw Error("microbench: no path of '" + o->isa + "' runs on this host (" + r.features + ")");
    std::fputs(microbench_text(r).c_str(), stdout);
    if (!o->json.empty()) {
      std::ofstream f(o->json);
      if (!f) throw Error("cannot write '" + o->json + "'");
      f << microbench_json(r).dump(2) << "\n";
    }
  });
}

}  // namespace lowbit::cli
