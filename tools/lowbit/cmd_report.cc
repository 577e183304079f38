// lowbit report: the study's experiments run again, written as a page with plots, Markdown and JSON
// (report/report.h).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "cli.h"
#include "lowbit/common/error.h"
#include "lowbit/report/report.h"

namespace lowbit::cli {

namespace {

// The AArch64 build of this tree, where the presets put it: build/aarch64/lowbit beside the
// build/<preset>/lowbit that is running.
std::string sibling_aarch64_cli() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const std::filesystem::path p = self.parent_path().parent_path() / "aarch64" / "lowbit";
  return std::filesystem::exists(p) ? p.string() : "";
}

}  // namespace

void register_report(CLI::App& app) {
  struct Opts {
    std::vector<std::string> models;
    std::string out, precisions, threads, aarch64;
    bool quick = false, quiet = false, no_aarch64 = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("report", "run the study's experiments and write DIR/index.html, report.md, report.json");
  cmd->add_option("MODEL", o->models, "zoo models (default: resnet50 resnet18 mobilenet_v2 resnet18-binary; the first is the headline)");
  cmd->add_option("-o,--output", o->out, "the folder to write")->required();
  cmd->add_flag("--quick", o->quick, "fewer runs, models and levels: a few minutes");
  cmd->add_flag("--quiet", o->quiet, "no progress bar (there is none when stderr is not a terminal)");
  cmd->add_option("--precisions", o->precisions, "comma-separated (default fp32,int8,w4a8,w4a4,w2a8,w2a2,w1a1)");
  cmd->add_option("--threads", o->threads, "comma-separated thread counts (default 1 and every core; --quick: 1)");
  cmd->add_option("--aarch64", o->aarch64,
                  "the AArch64 lowbit to run under qemu-aarch64 (default: build/aarch64/lowbit beside this build)");
  cmd->add_flag("--no-aarch64", o->no_aarch64, "leave out the AArch64 rows");
  cmd->callback([o] {
    ReportOptions r;
    r.models = o->models;
    r.quick = o->quick;
    std::stringstream ps(o->precisions), ts(o->threads);
    for (std::string s; std::getline(ps, s, ',');)
      if (!s.empty()) r.precisions.push_back(s);
    for (std::string s; std::getline(ts, s, ',');)
      if (!s.empty()) r.threads.push_back(std::stoi(s));
    if (!o->no_aarch64) r.aarch64_lowbit = o->aarch64.empty() ? sibling_aarch64_cli() : o->aarch64;
    if (!o->aarch64.empty() && !std::filesystem::exists(o->aarch64))
      throw Error("--aarch64: no file '" + o->aarch64 + "' (cmake --preset aarch64 && cmake --build --preset aarch64 --target lowbit_cli)");
    std::filesystem::create_directories(std::filesystem::path(o->out) / "work");
    r.work_dir = (std::filesystem::path(o->out) / "work").string();
    const bool bar = !o->quiet && isatty(STDERR_FILENO);
    if (bar)
      r.progress = [](int done, int total, const std::string& what) {
        const int w = 30, fill = total ? w * done / total : w;
        std::fprintf(stderr, "\r\033[K[%s%s] %d/%d %s", std::string(static_cast<size_t>(fill), '#').c_str(),
                     std::string(static_cast<size_t>(w - fill), '.').c_str(), done, total, what.c_str());
        if (done == total) std::fprintf(stderr, "\n");
      };
    const nlohmann::json rep = run_report(r);
    write_report(rep, o->out);
    std::printf("wrote %s/index.html, report.md, report.json and plots/ in %.0f s%s\n", o->out.c_str(),
                rep["elapsed_s"].get<double>(),
                rep["aarch64"].empty() ? " (no AArch64 rows: no AArch64 lowbit found)" : "");
  });
}

}  // namespace lowbit::cli
