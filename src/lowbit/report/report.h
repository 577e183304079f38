#pragma once
// `lowbit report`: the study (report/study.h) run again by one command, with lowbit's numbers
// beside its published ones. It measures, on this machine:
//   - every precision (fp32, int8, the sub-byte widths, w1a1; the headline model's sub-byte widths
//     in logical mode too) of each model, at each thread count, on the host and on the lesser ISA
//     levels it can run: latency (median, p90, p99, every sample), speed-up over fp32 and the
//     fraction of the microbenchmark's peak for that dtype;
//   - the same int8 and fp32 models cross-compiled for AArch64 (`--target cortex-a72`) and run, as
//     artifacts, by the AArch64 lowbit under qemu-aarch64 (-cpu cortex-a72 and max), when that
//     binary is there;
//   - what each width costs in accuracy (output cosine, top-1/5 agreement with fp32) and saves in
//     weight bytes, how long each takes to quantize and compile (the study's hang and crashes);
//   - the headline int8 plan: every node's kernel and rejected candidates, the key instructions in
//     each kernel's machine code, and each layer's time, MACs and bytes (the roofline);
//   - the microbenchmark (microbench/microbench.h).
// The result is one JSON document; the renderers turn it into a self-contained HTML page (inline
// SVG plots), Markdown with the plots beside it as SVG files, and the JSON itself.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lowbit {

struct ReportOptions {
  std::vector<std::string> models;      // empty: resnet50 (the headline), resnet18, mobilenet_v2, resnet18-binary
  std::vector<std::string> precisions;  // empty: fp32, int8, w4a8, w4a4, w2a8, w2a2, w1a1
  std::vector<int> threads;             // empty: 1 and every core (quick: 1)
  bool quick = false;                   // fewer runs, fewer models and levels: minutes, not tens of them
  // The AArch64 lowbit (an `aarch64` preset build of tools/lowbit) and how to emulate it; empty
  // path: no AArch64 rows. The emulator prefix is followed by "-cpu CPU BINARY ARGS...".
  std::string aarch64_lowbit;
  std::string qemu = "qemu-aarch64 -L /usr/aarch64-linux-gnu";
  std::vector<std::string> qemu_cpus = {"cortex-a72", "max"};
  std::string work_dir;  // where the cross-compiled artifacts go (must exist)
  // Called before each measurement: done so far, total, what comes next.
  std::function<void(int, int, const std::string&)> progress;
};

nlohmann::json run_report(const ReportOptions& o);

std::string report_html(const nlohmann::json& r);
std::string report_markdown(const nlohmann::json& r);  // plots as links to plots/NAME.svg
// NAME -> SVG text of every plot the page shows.
std::vector<std::pair<std::string, std::string>> report_plots(const nlohmann::json& r);
// dir/index.html, dir/report.md, dir/report.json and dir/plots/*.svg (dir is created).
void write_report(const nlohmann::json& r, const std::string& dir);

}  // namespace lowbit
