// lowbit explain / inspect / targets: what was chosen, what was rejected and why.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli.h"
#include "lowbit/api/describe.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/common/error.h"
#include "lowbit/dispatch/kernel_inspect.h"

namespace lowbit::cli {
namespace {

// The distinct kernels of the plan (with how many nodes use each) and the key instructions in
// their micro-kernels' machine code, disassembled from this executable.
void print_kernel_instructions(const CompiledModel& model) {
  std::vector<std::pair<const KernelCandidate*, int>> used;
  for (const Step& s : model.steps()) {
    auto it = std::find_if(used.begin(), used.end(), [&](auto& u) { return u.first == s.choice.chosen; });
    if (it == used.end()) used.push_back({s.choice.chosen, 1});
    else ++it->second;
  }
#if defined(__aarch64__)
  const std::vector<std::string_view> keys = {"fmla", "smlal", "sdot"};
#else
  const std::vector<std::string_view> keys = {"vfmadd231ps", "vpmaddubsw", "vpmaddwd", "vpdpbusd"};
#endif
  std::optional<Disassembly> dis;
  std::string why;
  try {
    dis = Disassembly::load();
  } catch (const Error& e) {
    why = e.what();
  }
  std::printf("\nkernels of the plan for target %s", model.target().name.c_str());
  if (dis) std::printf(" (machine code of %s)", dis->binary().c_str());
  std::printf(":\n%5s  %-36s %-44s %5s %7s", "nodes", "kernel", "micro-kernels", "fns", "instrs");
  for (auto k : keys) std::printf(" %11.*s", static_cast<int>(k.size()), k.data());
  std::printf("\n");
  for (auto& [c, count] : used) {
    std::string uk = c->ukernels.empty() ? "-" : c->ukernels[0];
    if (c->ukernels.size() > 1) uk += " +" + std::to_string(c->ukernels.size() - 1);
    std::printf("%5d  %-36s %-44s", count, c->name.c_str(), uk.c_str());
    if (c->ukernels.empty()) {
      std::printf(" portable C++ (no SIMD micro-kernel)\n");
      continue;
    }
    if (!dis) {
      std::printf(" -\n");
      continue;
    }
    KernelInspection r = dis->inspect(*c);
    if (!r.found()) {
      std::printf(" %s\n", r.error.c_str());
      continue;
    }
    std::printf(" %5zu %7lld", r.functions.size(), static_cast<long long>(r.instructions));
    for (auto k : keys) std::printf(" %11lld", static_cast<long long>(r.count(k)));
    std::printf("\n");
  }
  if (!dis) std::printf("instruction counts unavailable: %s\n", why.c_str());
}

}  // namespace

void register_explain(CLI::App& app) {
  struct Opts {
    ModelOptions m;
    std::string json;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("explain", "per node: the chosen kernel and why every other candidate was rejected");
  add_model_options(*cmd, o->m);
  cmd->add_option("--json", o->json, "write the explanation as JSON to this file ('-' for stdout)");
  cmd->callback([o] {
    const BuiltModel built = build_model(o->m, /*foreign_ok=*/true);
    const nlohmann::json j = explain_json(built, o->m.model);
    if (o->json != "-") {
      std::printf("target %s [%s]  precision %s\ncaches %s\n", j["target"].get<std::string>().c_str(),
                  j["features"].get<std::string>().c_str(), j["precision"].get<std::string>().c_str(),
                  j["caches"].get<std::string>().c_str());
      std::map<std::string, int> histogram;
      for (const auto& n : j["nodes"]) {
        const std::string kernel = n["kernel"];
        histogram[kernel]++;
        std::printf("\n%s %s -> %s  %s", n["label"].get<std::string>().c_str(), n["inputs"].get<std::string>().c_str(),
                    n["outputs"].get<std::string>().c_str(), n["signature"].get<std::string>().c_str());
        if (const int64_t macs = n["macs"]; macs) std::printf("  %.1f MMACs", static_cast<double>(macs) / 1e6);
        std::printf("\n  chosen   %s\n", kernel.c_str());
        if (n.contains("note")) std::printf("  note     %s\n", n["note"].get<std::string>().c_str());
        if (n.contains("precision"))
          std::printf("  precision %s (%s)\n", n["precision"]["precision"].get<std::string>().c_str(),
                      n["precision"]["why"].get<std::string>().c_str());
        for (const auto& r : n["rejected"])
          std::printf("  rejected %s: %s\n", r["kernel"].get<std::string>().c_str(), r["reason"].get<std::string>().c_str());
      }
      std::printf("\nkernels used:\n");
      for (auto& [k, c] : histogram) std::printf("  %4d x %s\n", c, k.c_str());
    }
    if (o->json == "-") {
      std::cout << j.dump(2) << "\n";
    } else if (!o->json.empty()) {
      std::ofstream f(o->json);
      if (!f) throw Error("cannot write '" + o->json + "'");
      f << j.dump(2) << "\n";
    }
  });
}

void register_inspect(CLI::App& app) {
  struct Opts {
    ModelOptions m;
    bool kernels = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("inspect", "the graph after passes: nodes, dtypes, shapes, MACs, weight bytes");
  add_model_options(*cmd, o->m);
  cmd->add_flag("--kernels", o->kernels,
                "also list the kernels the plan uses with the key SIMD instructions in their machine code (objdump)");
  cmd->callback([o] {
    const BuiltModel built = build_model(o->m, /*foreign_ok=*/true);
    const nlohmann::json j = inspect_json(built, o->m.model);
    std::printf("%-4s %-32s %-18s %-28s %-16s %-22s %-22s %10s %11s\n", "#", "node", "op", "inputs", "outputs",
                "dtypes", "output quant", "MMACs", "weights");
    size_t i = 0;
    for (const auto& n : j["nodes"]) {
      std::printf("%-4zu %-32.32s %-18.18s %-28.28s %-16.16s %-22.22s %-22.22s %10.1f %11s\n", i++,
                  n["node"].get<std::string>().c_str(), n["op_label"].get<std::string>().c_str(),
                  n["inputs"].get<std::string>().c_str(), n["outputs"].get<std::string>().c_str(),
                  n["signature"].get<std::string>().c_str(), n["quant"].get<std::string>().c_str(),
                  static_cast<double>(n["macs"].get<int64_t>()) / 1e6, human_bytes(n["weight_bytes"]).c_str());
    }
    std::printf("\n%zu nodes, %.3f GMACs, weights %s", j["steps"].get<size_t>(),
                static_cast<double>(j["macs"].get<int64_t>()) / 1e9, human_bytes(j["weight_bytes"]).c_str());
    for (auto& [dt, b] : j["weight_bytes_by_dtype"].items())
      std::printf("  [%s: %s]", dt.c_str(), human_bytes(b.get<int64_t>()).c_str());
    const int64_t peak = j["peak_activation_bytes"];
    std::printf(", peak activation memory %s (%lld bytes), %d domain change(s)\n", human_bytes(peak).c_str(),
                static_cast<long long>(peak), j["domain_changes"].get<int>());
    if (o->kernels) print_kernel_instructions(*built.model);
  });
}

void register_targets(CLI::App& app) {
  auto* cmd = app.add_subcommand("targets", "named targets with their CPU features; marks what the host can run");
  cmd->callback([] {
    Target host = host_target();
    std::printf("host: %s [%s]\ncaches: %s (blocking is sized from these; LOWBIT_CACHES=l1d=48K,l2=2M overrides)\n\n",
                host.name.c_str(), host.feature_string().c_str(), host.caches.to_string().c_str());
    for (const std::string& name : named_targets()) {
      Target t = parse_target(name);
      std::string lacking = host.missing(t);
      std::printf("  %-16s %-8s %-62s %s\n", name.c_str(), t.arch == Arch::x86_64 ? "x86-64" : "aarch64",
                  t.feature_string().c_str(), lacking.empty() ? "runs on host" : ("host lacks " + lacking).c_str());
    }
    std::printf("\nexplicit feature lists: --target x86-64+avx2+fma; LOWBIT_ISA=generic|avx2 caps the host.\n");
  });
}

void register_ops(CLI::App& app) {
  struct Opts {
    std::string target, op;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("ops", "every op the validation layer knows: dtype signatures and the kernels "
                                        "that serve it on a target, best first");
  cmd->add_option("--target", o->target, "target (default: host; `lowbit targets` lists them)");
  cmd->add_option("--op", o->op, "only this op");
  cmd->callback([o] {
    const Target t = parse_target(o->target);
    std::printf("target %s [%s]\n", t.name.c_str(), t.feature_string().c_str());
    int shown = 0;
    for (const std::string& op : supported_ops()) {
      if (!o->op.empty() && op != o->op) continue;
      ++shown;
      const OpSchema* s = find_schema(op);
      std::printf("\n%s  (%d-%d inputs)%s%s\n", op.c_str(), s->min_inputs, s->max_inputs, *s->signatures ? "  " : "",
                  s->signatures);
      for (const KernelCandidate* c : candidates_for(op)) {
        std::string status;
        if (!c->features.empty() && c->arch != t.arch) status = "other architecture";
        else {
          for (Feature f : c->features)
            if (!t.has(f)) status += std::string(status.empty() ? "target lacks " : ", ") + feature_name(f);
          // Planned by this build, created by the other architecture's (artifacts carry the plan).
          if (status.empty() && !c->create)
            status = std::string("available (its code is in the ") + (c->arch == Arch::x86_64 ? "x86-64" : "aarch64") +
                     " build)";
        }
        std::printf("  %-44s %s\n", c->name.c_str(), status.empty() ? "available" : status.c_str());
      }
    }
    if (!shown) throw Error("no op '" + o->op + "' (run `lowbit ops` for the list)");
  });
}

}  // namespace lowbit::cli
