// The report's pages: one list of sections, each a title, a table and (for some) a plot, written
// out as HTML (inline SVG) or Markdown (plots as files beside it).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "lowbit/report/report.h"
#include "lowbit/report/svg.h"

namespace lowbit {
namespace {

using json = nlohmann::json;

std::string f(const char* fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

std::string num_or(const json& j, const char* fmt, const std::string& missing = "-") {
  return j.is_number() ? f(fmt, j.get<double>()) : missing;
}

std::string str(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "-";
  return j.dump();
}

struct Table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
};

struct Section {
  std::string id, title, text;
  Table table;
  std::vector<std::string> plots;  // names in report_plots
};

// The headline model's rows on the host at the first thread count.
std::vector<const json*> headline_runs(const json& r, const std::string& mode = "native") {
  std::vector<const json*> v;
  if (!r.contains("runs") || r["runs"].empty()) return v;
  const std::string model = r["runs"][0]["model"];
  const int threads = r["runs"][0]["threads"];
  for (const json& x : r["runs"])
    if (x["model"] == model && x["target"] == "host" && x["threads"] == threads && (mode.empty() || x["mode"] == mode))
      v.push_back(&x);
  return v;
}

const json* find_run(const json& r, const std::string& precision, const std::string& target = "host") {
  for (const json* x : headline_runs(r, ""))
    if ((*x)["precision"] == precision && (*x)["mode"] == "native" && (*x)["target"] == target) return x;
  return nullptr;
}

const json* find_build(const json& r, const std::string& precision) {
  if (!r.contains("builds")) return nullptr;
  for (const json& b : r["builds"])
    if (b["model"] == r["runs"][0]["model"] && b["precision"] == precision) return &b;
  return nullptr;
}

std::string ratio(double a, double b) { return b > 0 ? f("%.2fx", a / b) : "-"; }

std::vector<Section> sections(const json& r) {
  std::vector<Section> out;
  const json& st = r["study"];
  // 1. The study, side by side.
  {
    Section s{"study", "The study, reproduced", "", {}, {}};
    const std::string model = r["runs"].empty() ? std::string("-") : str(r["runs"][0]["model"]);
    s.text = "Published: " + str(st["source"]) + ". lowbit: this machine, " + model +
             " batch 1 (the headline model; the study's is resnet50), the first thread count; medians.";
    s.table.head = {"experiment", "the study (TVM)", "lowbit, measured here"};
    const json* fp = find_run(r, "fp32");
    const json* i8 = find_run(r, "int8");
    std::string ours = "-";
    if (fp && i8)
      ours = f("%.1f", (*fp)["median_ms"].get<double>()) + " vs " + f("%.1f", (*i8)["median_ms"].get<double>()) +
             " ms: int8 " + ratio((*fp)["median_ms"], (*i8)["median_ms"]) + " as fast as fp32";
    s.table.rows.push_back({"x86-64 fp32 vs int8", f("%.1f", st["x86_fp32_ms"]) + " vs " + f("%.1f", st["x86_int8_ms"]) +
                                                        " ms: int8 " + ratio(st["x86_fp32_ms"], st["x86_int8_ms"]) +
                                                        " (2.28x slower)",
                            ours});
    std::map<std::string, std::map<std::string, const json*>> a64;
    for (const json& x : r["aarch64"]) a64[x["cpu"]][x["precision"]] = &x;
    for (auto& [cpu, by] : a64) {
      std::string v = "-";
      if (by.count("fp32") && by.count("int8") && by["fp32"]->contains("median_ms") && by["int8"]->contains("median_ms"))
        v = f("%.0f", (*by["fp32"])["median_ms"].get<double>()) + " vs " + f("%.0f", (*by["int8"])["median_ms"].get<double>()) +
            " ms at " + std::to_string((*by["fp32"])["side"].get<int>()) + "x" + std::to_string((*by["fp32"])["side"].get<int>()) +
            ": int8 " + ratio((*by["fp32"])["median_ms"], (*by["int8"])["median_ms"]) + " (emulated)";
      else if (by.count("int8") && by["int8"]->contains("error"))
        v = "not measured: " + str((*by["int8"])["error"]);
      s.table.rows.push_back({"AArch64 under QEMU, -cpu " + cpu + ", cross-compiled artifact",
                              cpu == "cortex-a72" ? f("%.1f", st["qemu_a72_fp32_ms"]) + " vs " +
                                                        f("%.1f", st["qemu_a72_int8_ms"]) + " ms: int8 " +
                                                        ratio(st["qemu_a72_fp32_ms"], st["qemu_a72_int8_ms"])
                                                  : "-",
                              v});
    }
    if (a64.empty())
      s.table.rows.push_back({"AArch64 under QEMU", f("%.1f", st["qemu_a72_fp32_ms"]) + " vs " + f("%.1f", st["qemu_a72_int8_ms"]) +
                                                        " ms: int8 2.07x",
                              "not measured here (no AArch64 lowbit: build the aarch64 preset, pass --aarch64)"});
    const json* bf = find_build(r, "fp32");
    const json* b8 = find_build(r, "int8");
    s.table.rows.push_back({"int8 weight compression",
                            f("%.1f", st["fp32_params_mb"]) + " vs " + f("%.1f", st["int8_params_mb"]) + " MB: " +
                                ratio(st["fp32_params_mb"], st["int8_params_mb"]),
                            bf && b8 ? f("%.1f", (*bf)["weight_bytes"].get<double>() / 1e6) + " vs " +
                                           f("%.1f", (*b8)["weight_bytes"].get<double>() / 1e6) + " MB: " +
                                           ratio((*bf)["weight_bytes"], (*b8)["weight_bytes"])
                                     : "-"});
    for (auto [prec, key] : std::vector<std::pair<const char*, const char*>>{{"w4a4", "int4"}, {"w2a2", "int2"}, {"w1a1", "int1"}}) {
      const json* b = find_build(r, prec);
      const json* run = find_run(r, prec);
      std::string v = "-";
      if (b && (*b)["status"] == "ran")
        v = "quantized and compiled in " + f("%.1f", (*b)["build_s"]) + " s; ran " +
            (run ? f("%.1f", (*run)["median_ms"]) + " ms" : std::string("-"));
      else if (b)
        v = str((*b)["status"]);
      s.table.rows.push_back({std::string("native ") + key + " (lowbit " + prec + ")", str(st[key]), v});
    }
    for (const json& l : r["logical"]) {
      const std::string p = l["precision"];
      std::string tvm = p.rfind("w4", 0) == 0 ? f("%.1f ms", st["logical_nbit4_ms"]) : p.rfind("w2", 0) == 0 ? f("%.1f ms", st["logical_nbit2_ms"]) : "-";
      std::string ours = "-";
      for (const json& x : r["runs"])
        if (x["mode"] == "logical" && x["precision"] == p) ours = f("%.1f ms", x["median_ms"]);
      if (l.contains("bit_identical_to_native"))
        ours += l["bit_identical_to_native"].get<bool>() ? ", outputs bit-identical to native" : ", outputs DIFFER from native";
      s.table.rows.push_back({"logical " + p + " (codes in int8 storage)", tvm, ours});
    }
    const json& mb = r["microbench"];
    std::string emu = "-";
    if (r.contains("aarch64_microbench") && r["aarch64_microbench"].contains("int_over_fp_scalar"))
      emu = f("%.2fx", r["aarch64_microbench"]["int_over_fp_scalar"]) + " under qemu; best int8 path / best fp32 vector path " +
            f("%.2fx", r["aarch64_microbench"]["int8_over_fp32_simd"]);
    s.table.rows.push_back({"scalar integer vs fp32 multiply-adds", f("%.2fx", st["qemu_scalar_int_over_fp"]) + " under QEMU TCG",
                            emu + " (natively here: " + f("%.2fx", mb["int_over_fp_scalar"]) + ")"});
    out.push_back(std::move(s));
  }
  // 2. Latency of every run.
  {
    Section s{"latency", "Latency per precision, thread count and ISA level", "", {}, {"latency", "distribution"}};
    s.text = "Medians with p90 and p99; speed-up against fp32 of the same model, target and threads; GOP/s as a "
             "fraction of the microbenchmark's best path for the dtype times the threads.";
    s.table.head = {"model", "precision", "mode", "target", "threads", "median ms", "p90", "p99", "vs fp32", "GOP/s",
                    "of peak"};
    for (const json& x : r["runs"])
      s.table.rows.push_back({str(x["model"]), str(x["precision"]), str(x["mode"]), str(x["target"]),
                              std::to_string(x["threads"].get<int>()), f("%.2f", x["median_ms"]), f("%.2f", x["p90_ms"]),
                              f("%.2f", x["p99_ms"]), num_or(x["speedup_vs_fp32"], "%.2fx"), f("%.1f", x["gops"]),
                              x["peak_fraction"].is_number() ? f("%.0f%%", 100 * x["peak_fraction"].get<double>()) : "-"});
    out.push_back(std::move(s));
  }
  // 3. Accuracy and size.
  {
    Section s{"accuracy", "Accuracy and weight bytes per width", "", {}, {"size_accuracy"}};
    s.text = "Output against fp32 on held-out synthetic inputs (the zoo's deterministic weights: relative, not "
             "ImageNet accuracy).";
    s.table.head = {"precision", "cosine", "top-1 agree", "top-5 agree", "weights MB", "smaller than fp32"};
    for (const json& a : r["accuracy"])
      s.table.rows.push_back({str(a["precision"]), f("%.5f", a["cosine"]), f("%.0f%%", 100 * a["top1"].get<double>()),
                              f("%.0f%%", 100 * a["top5"].get<double>()), f("%.2f", a["weight_bytes"].get<double>() / 1e6),
                              f("%.1fx", a["compression"])});
    out.push_back(std::move(s));
  }
  // 4. Builds.
  {
    Section s{"builds", "Quantize and compile", "", {}, {}};
    s.text = "Each width is quantized (calibration included) and compiled, or refused with a reason, in seconds.";
    s.table.head = {"model", "precision", "status", "seconds", "weights MB", "nodes kept fp32 by the guard"};
    for (const json& b : r["builds"])
      s.table.rows.push_back({str(b["model"]), str(b["precision"]), str(b["status"]), num_or(b.value("build_s", json()), "%.2f"),
                              b.contains("weight_bytes") ? f("%.2f", b["weight_bytes"].get<double>() / 1e6) : "-",
                              b.contains("kept_fp32") ? std::to_string(b["kept_fp32"].get<int>()) : "-"});
    out.push_back(std::move(s));
  }
  // 5. Layers.
  {
    Section s{"layers", "Per-layer time and the roofline", "", {}, {"layers", "roofline"}};
    s.text = "The headline model's layers at the first thread count; intensity = MACs per byte of weights and "
             "activations moved. Ceilings: the microbenchmark's peaks and read bandwidths (one core).";
    s.table.head = {"precision", "node", "op", "kernel", "ms", "MMACs", "GOP/s"};
    std::vector<const json*> ls;
    for (const json& l : r["layers"]) ls.push_back(&l);
    std::stable_sort(ls.begin(), ls.end(), [](const json* a, const json* b) { return (*a)["ms"] > (*b)["ms"]; });
    for (size_t i = 0; i < ls.size() && i < 30; ++i) {
      const json& l = *ls[i];
      const double ms = l["ms"], macs = l["macs"];
      s.table.rows.push_back({str(l["precision"]), str(l["node"]), str(l["op"]), str(l["kernel"]), f("%.3f", ms),
                              f("%.1f", macs / 1e6), ms > 0 ? f("%.1f", 2 * macs / (ms * 1e6)) : "-"});
    }
    out.push_back(std::move(s));
  }
  // 6. The microbenchmark.
  {
    Section s{"microbench", "Multiply-add throughput per instruction path (one core)", "", {}, {}};
    const json& mb = r["microbench"];
    s.text = str(mb["cpu"]) + " [" + str(mb["features"]) + "], clock " + f("%.2f GHz", mb["ghz"]) + ". Read bandwidth:";
    for (const json& b : mb["bandwidth"]) s.text += " " + str(b["level"]) + " " + f("%.1f GB/s", b["gbps"]);
    s.table.head = {"path", "dtype", "isa", "GOP/s", "MACs/cycle", "bound", "of it", "instructions"};
    for (const json& p : mb["paths"])
      s.table.rows.push_back({str(p["name"]), str(p["dtype"]), str(p["isa"]), f("%.1f", p["gops"]),
                              f("%.1f", p["macs_per_cycle"]), f("%.0f", p["limit_per_cycle"]),
                              f("%.0f%%", 100 * p["fraction"].get<double>()), str(p["instructions"])});
    if (r.contains("aarch64_microbench") && r["aarch64_microbench"].contains("paths"))
      for (const json& p : r["aarch64_microbench"]["paths"])
        s.table.rows.push_back({str(p["name"]) + " (AArch64, emulated)", str(p["dtype"]), str(p["isa"]), f("%.2f", p["gops"]),
                                "-", f("%.0f", p["limit_per_cycle"]), "-", str(p["instructions"])});
    out.push_back(std::move(s));
  }
  // 7. Dispatch and instructions.
  if (r.contains("dispatch")) {
    Section s{"dispatch", "The int8 plan: every node's kernel", "", {}, {}};
    s.text = "Chosen kernel, how many candidates were rejected and the first reason (`lowbit explain` has them all).";
    s.table.head = {"node", "op", "kernel", "rejected", "first rejection"};
    for (const json& n : r["dispatch"]["nodes"])
      s.table.rows.push_back({str(n["node"]), str(n["op"]), str(n["kernel"]), std::to_string(n["rejected"].get<int>()),
                              n.contains("first_rejection") ? str(n["first_rejection"]["kernel"]) + ": " +
                                                                  str(n["first_rejection"]["reason"])
                                                            : "-"});
    out.push_back(std::move(s));
  }
  if (r.contains("kernels")) {
    Section s{"kernels", "Key instructions in each kernel's machine code", "", {}, {}};
    s.text = "Counted in this binary's disassembly (objdump), the micro-kernels and what they call: the study "
             "found no vpdpbusd in TVM's int8 build.";
    s.table.head = {"kernel", "instructions", "key instructions"};
    for (const json& k : r["kernels"]) {
      std::string keys;
      if (k.contains("key"))
        for (auto& [name, n] : k["key"].items()) keys += (keys.empty() ? "" : ", ") + name + " " + std::to_string(n.get<int64_t>());
      if (k["error"].is_string()) keys = "(" + k["error"].get<std::string>() + ")";
      s.table.rows.push_back({str(k["kernel"]), k.contains("instructions") ? std::to_string(k["instructions"].get<int64_t>()) : "-", keys});
    }
    out.push_back(std::move(s));
  }
  if (r.contains("notes") && !r["notes"].empty()) {
    Section s{"notes", "What the builds said", "", {}, {}};
    s.text = "The guard's warnings and the quantizer's notes, under the step that printed them.";
    s.table.head = {"step", "level", "message"};
    for (const json& n : r["notes"]) s.table.rows.push_back({str(n["step"]), str(n["level"]), str(n["message"])});
    out.push_back(std::move(s));
  }
  return out;
}

std::string html_table(const Table& t) {
  std::string s = "<table>\n<tr>";
  for (const std::string& h : t.head) s += "<th>" + svg::escape(h) + "</th>";
  s += "</tr>\n";
  for (const auto& row : t.rows) {
    s += "<tr>";
    for (const std::string& c : row) s += "<td>" + svg::escape(c) + "</td>";
    s += "</tr>\n";
  }
  return s + "</table>\n";
}

std::string md_cell(std::string c) {
  for (size_t i = 0; (i = c.find('|', i)) != std::string::npos; i += 2) c.replace(i, 1, "\\|");
  for (size_t i = 0; (i = c.find('\n', i)) != std::string::npos;) c.replace(i, 1, "<br>");
  return c;
}

std::string md_table(const Table& t) {
  std::string s = "|";
  for (const std::string& h : t.head) s += " " + md_cell(h) + " |";
  s += "\n|";
  for (size_t i = 0; i < t.head.size(); ++i) s += "---|";
  s += "\n";
  for (const auto& row : t.rows) {
    s += "|";
    for (const std::string& c : row) s += " " + md_cell(c) + " |";
    s += "\n";
  }
  return s;
}

std::string header_text(const json& r) {
  const json& h = r["host"];
  return "Host: " + str(h["cpu"]) + " [" + str(h["features"]) + "], " + std::to_string(h["cores"].get<int>()) +
         " core(s), " + str(h["caches"]) + ". " + str(r["date_utc"]) + " UTC, " + (r["quick"].get<bool>() ? "--quick, " : "") +
         f("%.0f s.", r["elapsed_s"]);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> report_plots(const json& r) {
  std::vector<std::pair<std::string, std::string>> plots;
  const std::vector<const json*> runs = headline_runs(r);
  const std::string model = runs.empty() ? "" : str((*runs[0])["model"]);
  {
    std::vector<svg::Bar> bars;
    for (const json* x : runs)
      bars.push_back({str((*x)["precision"]), (*x)["median_ms"], (*x)["p90_ms"], (*x)["p99_ms"], ""});
    plots.push_back({"latency", svg::bars(model + " latency per precision (median; whisker p90 to p99)", "ms", bars)});
  }
  {
    std::vector<svg::Strip> strips;
    for (const json* x : runs) strips.push_back({str((*x)["precision"]), (*x)["samples_ms"].get<std::vector<double>>()});
    plots.push_back({"distribution", svg::strips(model + " latency of every timed run", "ms", strips)});
  }
  {
    // Per precision, the layers by time: the eight slowest of the int8 plan by name, the rest together.
    std::map<std::string, double> int8_ms;
    for (const json& l : r["layers"])
      if (l["precision"] == "int8") int8_ms[l["node"]] += l["ms"].get<double>();
    std::vector<std::pair<double, std::string>> top;
    for (auto& [n, ms] : int8_ms) top.push_back({ms, n});
    std::sort(top.rbegin(), top.rend());
    std::set<std::string> named;
    for (size_t i = 0; i < top.size() && i < 8; ++i) named.insert(top[i].second);
    std::vector<svg::StackedRow> rows;
    for (const char* p : {"fp32", "int8"}) {
      svg::StackedRow row{p, {}};
      double rest = 0;
      for (const auto& t : top)
        for (const json& l : r["layers"])
          if (l["precision"] == p && l["node"] == t.second && named.count(t.second))
            row.segments.push_back({t.second, l["ms"]});
      for (const json& l : r["layers"])
        if (l["precision"] == p && !named.count(l["node"])) rest += l["ms"].get<double>();
      row.segments.push_back({"other layers", rest});
      rows.push_back(row);
    }
    plots.push_back({"layers", svg::stacked(model + " time per layer (ms; the int8 plan's eight slowest by name)", "ms", rows)});
  }
  {
    std::vector<svg::Point> pts;
    for (const json& l : r["layers"]) {
      const double bytes = l["weight_bytes"].get<double>() + l["activation_bytes"].get<double>(), macs = l["macs"];
      const double ms = l["ms"];
      if (macs <= 0 || bytes <= 0 || ms <= 0) continue;
      pts.push_back({str(l["node"]), macs / bytes, 2 * macs / (ms * 1e6), str(l["precision"])});
    }
    std::vector<svg::Line> lines;
    const json& mb = r["microbench"];
    double fp = 0, i8 = 0;
    for (const json& p : mb["paths"]) {
      if (p["isa"] == "baseline") continue;
      if (p["dtype"] == "fp32") fp = std::max(fp, p["gops"].get<double>());
      if (p["dtype"] == "int8") i8 = std::max(i8, p["gops"].get<double>());
    }
    double dram = 0, l2 = 0;
    for (const json& b : mb["bandwidth"]) {
      if (b["level"] == "DRAM") dram = b["gbps"];
      if (b["level"] == "L2") l2 = b["gbps"];
    }
    if (fp > 0 && dram > 0) lines.push_back({"fp32 peak, DRAM", 2 * dram, fp});
    if (i8 > 0 && dram > 0) lines.push_back({"int8 peak, DRAM", 2 * dram, i8});
    if (i8 > 0 && l2 > 0) lines.push_back({"int8 peak, L2", 2 * l2, i8});
    plots.push_back({"roofline", svg::scatter(model + " roofline: each layer (one core)", "MACs per byte moved", "GOP/s",
                                              pts, lines, true, true, false)});
  }
  {
    std::vector<svg::Point> pts;
    for (const json& a : r["accuracy"])
      pts.push_back({str(a["precision"]), a["weight_bytes"].get<double>() / 1e6, a["cosine"], "width"});
    plots.push_back({"size_accuracy", svg::scatter(model + " size against accuracy", "weights (MB)",
                                                   "output cosine against fp32", pts, {}, true, false, true)});
  }
  return plots;
}

std::string report_html(const json& r) {
  std::map<std::string, std::string> plots;
  for (auto& [name, s] : report_plots(r)) plots[name] = s;
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>lowbit report</title>\n<style>\n"
      "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\n"
      "table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;"
      "text-align:left;white-space:pre-wrap}th{background:#f3f3f3}svg.plot{display:block;margin:1em 0;border:1px solid #eee}\n"
      "</style>\n</head>\n<body>\n<h1>lowbit report</h1>\n<p>" +
      svg::escape(header_text(r)) + "</p>\n<ul>\n";
  const std::vector<Section> ss = sections(r);
  for (const Section& s : ss) h += "<li><a href=\"#" + s.id + "\">" + svg::escape(s.title) + "</a></li>\n";
  h += "</ul>\n";
  for (const Section& s : ss) {
    h += "<h2 id=\"" + s.id + "\">" + svg::escape(s.title) + "</h2>\n<p>" + svg::escape(s.text) + "</p>\n";
    for (const std::string& p : s.plots) h += plots[p];
    h += html_table(s.table);
  }
  return h + "</body>\n</html>\n";
}

std::string report_markdown(const json& r) {
  std::string m = "# lowbit report\n\n" + header_text(r) + "\n";
  for (const Section& s : sections(r)) {
    m += "\n## " + s.title + "\n\n" + s.text + "\n\n";
    for (const std::string& p : s.plots) m += "![" + p + "](plots/" + p + ".svg)\n\n";
    m += md_table(s.table);
  }
  return m;
}

}  // namespace lowbit
