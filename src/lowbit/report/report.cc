#include "lowbit/report/report.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "lowbit/api/bench.h"
#include "lowbit/api/build.h"
#include "lowbit/api/compare.h"
#include "lowbit/api/describe.h"
#include "lowbit/artifact/artifact.h"
#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/dispatch/kernel_inspect.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/microbench/microbench.h"
#include "lowbit/report/study.h"

namespace lowbit {
namespace {

using json = nlohmann::json;

// Bytes a value occupies (packed sub-byte codes count their bits).
int64_t value_bytes(const Value& v) {
  int64_t n = 1;
  for (int64_t d : v.shape) n *= d;
  return (n * dtype_info(v.dtype).bits + 7) / 8;
}

struct Plan {
  std::vector<std::string> models, precisions;
  std::vector<int> threads;
  int warmup = 0, runs = 0, accuracy_inputs = 0;
  std::vector<std::string> levels;          // named targets below the host this CPU runs
  std::vector<std::string> logical;         // headline sub-byte precisions also run in logical mode
  std::vector<std::string> qemu_cpus;
  int qemu_side = 224, qemu_runs = 0;
};

Plan plan_for(const ReportOptions& o) {
  Plan p;
  p.models = o.models.empty() ? std::vector<std::string>{"resnet50", "resnet18", "mobilenet_v2", "resnet18-binary"}
                              : o.models;
  p.precisions = o.precisions.empty() ? std::vector<std::string>{"fp32", "int8", "w4a8", "w4a4", "w2a8", "w2a2", "w1a1"}
                                      : o.precisions;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  p.threads = o.threads;
  if (p.threads.empty()) p.threads = o.quick || cores == 1 ? std::vector<int>{1} : std::vector<int>{1, cores};
  p.warmup = o.quick ? 2 : 5;
  p.runs = o.quick ? 10 : 40;
  p.accuracy_inputs = o.quick ? 2 : 8;
  const Target& host = host_target();
  const std::vector<std::string> ladder = host.arch == Arch::x86_64
                                              ? std::vector<std::string>{"x86-64", "x86-64-v3", "skylake-avx512", "cascadelake"}
                                              : std::vector<std::string>{"cortex-a72", "neoverse-n1", "armv8.6-a"};
  for (const std::string& t : ladder)
    if (host.missing(parse_target(t)).empty() && parse_target(t).spec() != host.spec()) p.levels.push_back(t);
  if (o.quick && p.levels.size() > 1) p.levels.resize(1);  // the baseline: SIMD int8 or not
  for (const std::string& pr : p.precisions)
    if (parse_precision(pr).subbyte() && parse_precision(pr).weight != DType::b1 &&
        (!o.quick || p.logical.empty()))
      p.logical.push_back(pr);
  if (!o.aarch64_lowbit.empty() && std::filesystem::exists(o.aarch64_lowbit))
    p.qemu_cpus = o.quick ? std::vector<std::string>{o.qemu_cpus.front()} : o.qemu_cpus;
  p.qemu_side = o.quick ? 112 : 224;
  p.qemu_runs = o.quick ? 1 : 3;
  return p;
}

// Models beyond the headline get fp32 and int8 (and the binary network its own form) in a quick run.
std::vector<std::string> precisions_of(const Plan& p, const std::string& model, bool quick, bool headline) {
  std::vector<std::string> r;
  for (const std::string& pr : p.precisions) {
    const Precision q = parse_precision(pr);
    if (model == "resnet18-binary" && q.subbyte()) continue;  // binary already; its real layers take fp32 / int8
    if (!headline && quick && q.subbyte()) continue;
    r.push_back(pr);
  }
  return r;
}

json latency(const BenchResult& r) {
  return {{"median_ms", r.stats.median}, {"p90_ms", r.stats.p90}, {"p99_ms", r.stats.p99},
          {"min_ms", r.stats.min},       {"mean_ms", r.stats.mean}, {"first_run_ms", r.first_run_ms},
          {"samples_ms", r.ms}};
}

// The best GOP/s of the microbenchmark's paths for a dtype ("fp32": vector paths only).
double peak_gops(const MicrobenchResult& mb, const std::string& dtype) {
  double best = 0;
  for (const MicrobenchPath& p : mb.paths)
    if (p.dtype == dtype && p.isa != "baseline") best = std::max(best, p.gops);
  return best;
}

std::string shell_quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

}  // namespace

json run_report(const ReportOptions& o) {
  const Plan plan = plan_for(o);
  // What the builds say (the guard's warnings, sub-byte notes) goes into the report, under the
  // step that said it, not onto the terminal between progress updates.
  std::string current;
  json notes = json::array();
  std::set<std::string> said;
  struct Restore {
    LogSink previous;
    ~Restore() { set_log_sink(previous); }
  } restore{set_log_sink([&](LogLevel level, const std::string& message) {
    if (level == LogLevel::trace || !said.insert(message).second) return;
    notes.push_back({{"step", current}, {"level", level == LogLevel::warning ? "warning" : "note"}, {"message", message}});
  })};
  const std::string headline = plan.models.front();
  // The work, counted first so the progress has a total.
  int total = 1 + 3;  // microbench; headline accuracy, plan (explain, kernels), layers
  for (const std::string& m : plan.models)
    total += static_cast<int>(precisions_of(plan, m, o.quick, m == headline).size());
  total += static_cast<int>(plan.logical.size() + 2 * plan.levels.size() + 2 * plan.qemu_cpus.size());
  if (!plan.qemu_cpus.empty()) total += 3;  // two cross-compiles, the emulated microbenchmark
  int done = 0;
  auto step = [&](const std::string& what) {
    if (o.progress) o.progress(done, total, what);
    current = what;
    ++done;
  };
  const auto started = std::chrono::steady_clock::now();
  json r;
  {
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::gmtime(&now));
    r["date_utc"] = date;
  }
  r["quick"] = o.quick;
  r["study"] = {{"source", study::kSource},
                {"x86_fp32_ms", study::kX86Fp32Ms},
                {"x86_int8_ms", study::kX86Int8Ms},
                {"qemu_a72_fp32_ms", study::kQemuA72Fp32Ms},
                {"qemu_a72_int8_ms", study::kQemuA72Int8Ms},
                {"fp32_params_mb", study::kFp32ParamsMB},
                {"int8_params_mb", study::kInt8ParamsMB},
                {"logical_nbit4_ms", study::kLogicalNbit4Ms},
                {"logical_nbit2_ms", study::kLogicalNbit2Ms},
                {"logical_nbit1_ms", study::kLogicalNbit1Ms},
                {"qemu_scalar_int_over_fp", study::kQemuScalarIntOverFp},
                {"int4", study::kInt4},
                {"int2", study::kInt2},
                {"int1", study::kInt1}};
  step("microbenchmark");
  MicrobenchOptions mo;
  mo.quick = o.quick;
  const MicrobenchResult mb = run_microbench(mo);
  r["microbench"] = microbench_json(mb);
  const Target& host = host_target();
  r["host"] = {{"cpu", mb.cpu}, {"target", host.name}, {"features", host.feature_string()},
               {"caches", host.caches.to_string()},
               {"cores", static_cast<int>(std::thread::hardware_concurrency())}};

  json runs = json::array(), builds = json::array();
  std::map<std::string, BuiltModel> fp32_of;            // model -> its fp32 build (threads[0])
  std::map<std::string, BuiltModel> headline_builds;    // precision -> headline build
  std::map<std::pair<std::string, int>, double> fp32_ms;  // (model target, threads) -> fp32 median
  auto bench_row = [&](const std::string& model, const std::string& precision, const std::string& mode,
                       const std::string& target, const CompiledModel& m, int threads, const std::string& emulated) {
    BenchOptions bo;
    bo.warmup = plan.warmup, bo.runs = plan.runs;
    const std::vector<Tensor> in = synthetic_inputs(m.graph(), 42);
    const BenchResult br = run_benchmark(m, in, bo);
    json row = latency(br);
    const int64_t macs = model_macs(m);
    row["model"] = model, row["precision"] = precision, row["mode"] = mode, row["target"] = target;
    row["threads"] = threads, row["macs"] = macs, row["weight_bytes"] = m.weight_bytes();
    row["emulated"] = emulated.empty() ? json() : json(emulated);
    row["gops"] = 2.0 * static_cast<double>(macs) / (br.stats.median * 1e6);
    // The peak of the path its kernels take: fp32 FMA, the int8 multiply-adds (narrow codes
    // included), or the binary popcount.
    const std::string dtype = precision == "fp32" ? "fp32" : precision == "w1a1" ? "b1" : "int8";
    const double peak = peak_gops(mb, dtype) * threads;
    row["peak_fraction"] = peak > 0 && emulated.empty() ? json(row["gops"].get<double>() / peak) : json();
    if (precision == "fp32" && mode == "native") fp32_ms[std::make_pair(model + "@" + target + "native", threads)] = br.stats.median;
    auto f = fp32_ms.find(std::make_pair(model + "@" + target + "native", threads));
    row["speedup_vs_fp32"] = f != fp32_ms.end() ? json(f->second / br.stats.median) : json();
    runs.push_back(row);
  };

  for (const std::string& model : plan.models) {
    const bool is_headline = model == headline;
    for (const std::string& precision : precisions_of(plan, model, o.quick, is_headline)) {
      step("build and time " + model + " " + precision);
      BuildOptions bo;
      bo.model = model;
      bo.precision = parse_precision(precision);
      bo.compile.threads = plan.threads.front();
      json brow = {{"model", model}, {"precision", precision}};
      BuiltModel b;
      try {
        b = build_model(bo);
      } catch (const Error& e) {
        brow["status"] = std::string("refused: ") + e.what();
        builds.push_back(brow);
        continue;
      }
      brow["status"] = "ran";
      brow["build_s"] = b.build_ms / 1e3;
      brow["weight_bytes"] = b.model->weight_bytes();
      brow["kept_fp32"] = static_cast<int>(b.slow.size());
      builds.push_back(brow);
      for (int t : plan.threads) {
        if (t == plan.threads.front()) {
          bench_row(model, b.precision, "native", "host", *b.model, t, "");
        } else {
          CompileOptions co;
          co.threads = t;
          co.target = b.model->target();
          bench_row(model, b.precision, "native", "host", *CompiledModel::compile(b.graph, co), t, "");
        }
      }
      if (precision == "fp32") fp32_of[model] = std::move(b);
      else if (is_headline) headline_builds[precision] = std::move(b);
    }
  }
  // The study's control experiment: the same codes in int8 storage. Outputs must be bit-identical.
  json logical = json::array();
  for (const std::string& precision : plan.logical) {
    step("logical mode " + headline + " " + precision);
    BuildOptions bo;
    bo.model = headline;
    bo.precision = parse_precision(precision);
    bo.compile.threads = plan.threads.front();
    bo.quantize.mode = StorageMode::logical;
    const BuiltModel b = build_model(bo);
    bench_row(headline, b.precision, "logical", "host", *b.model, plan.threads.front(), "");
    json row = {{"precision", precision}, {"weight_bytes", b.model->weight_bytes()}};
    if (auto nat = headline_builds.find(precision); nat != headline_builds.end()) {
      const std::vector<Tensor> in = synthetic_inputs(b.model->graph(), 7);
      const Tensor a = b.model->run(in)[0], c = nat->second.model->run(in)[0];
      row["bit_identical_to_native"] =
          a.nbytes() == c.nbytes() && std::memcmp(a.raw(), c.raw(), static_cast<size_t>(a.nbytes())) == 0;
      row["native_weight_bytes"] = nat->second.model->weight_bytes();
    }
    logical.push_back(row);
  }
  // Lesser ISA levels of this CPU: fp32 and int8 of the headline.
  for (const std::string& level : plan.levels)
    for (const char* precision : {"fp32", "int8"}) {
      step(std::string("ISA level ") + level + " " + precision);
      BuildOptions bo;
      bo.model = headline;
      bo.precision = parse_precision(precision);
      bo.compile.threads = plan.threads.front();
      bo.target = parse_target(level);
      const BuiltModel b = build_model(bo);
      bench_row(headline, b.precision, "native", level, *b.model, plan.threads.front(), "");
    }
  r["runs"] = runs;
  r["builds"] = builds;
  r["logical"] = logical;

  // Accuracy per width, against fp32 on held-out synthetic inputs.
  step("accuracy of each width");
  json accuracy = json::array();
  if (auto fp = fp32_of.find(headline); fp != fp32_of.end()) {
    const auto inputs = held_out_inputs(fp->second.model->graph(), plan.accuracy_inputs);
    const int64_t fp_bytes = fp->second.model->weight_bytes();
    accuracy.push_back({{"precision", "fp32"}, {"cosine", 1.0}, {"top1", 1.0}, {"top5", 1.0},
                        {"weight_bytes", fp_bytes}, {"compression", 1.0}});
    for (auto& [precision, b] : headline_builds) {
      const Comparison c = compare_models(fp->second, b, nullptr, inputs);
      accuracy.push_back({{"precision", precision},
                          {"cosine", c.vs_fp32.cosine_mean},
                          {"top1", c.vs_fp32.top1},
                          {"top5", c.vs_fp32.top5},
                          {"weight_bytes", b.model->weight_bytes()},
                          {"compression", static_cast<double>(fp_bytes) / static_cast<double>(b.model->weight_bytes())}});
    }
  }
  r["accuracy"] = accuracy;

  // The headline int8 plan: every node's kernel, and the key instructions of each kernel used.
  step("dispatch table and kernel instructions");
  if (auto i8 = headline_builds.find("int8"); i8 != headline_builds.end()) {
    json nodes = json::array();
    for (const json& n : explain_json(i8->second, headline)["nodes"]) {
      json row = {{"node", n["node"]}, {"op", n["op"]}, {"kernel", n["kernel"]}, {"rejected", n["rejected"].size()}};
      if (!n["rejected"].empty()) row["first_rejection"] = n["rejected"][0];
      nodes.push_back(row);
    }
    r["dispatch"] = {{"model", headline}, {"precision", "int8"}, {"nodes", nodes}};
    json kernels = json::array();
    try {
      const Disassembly dis = Disassembly::load();
      std::set<std::string> seen;
      for (const Step& s : i8->second.model->steps()) {
        if (!seen.insert(s.choice.chosen->name).second) continue;
        const KernelInspection k = dis.inspect(*s.choice.chosen);
        json counts = json::object();
        for (size_t i = 0; i < kKeyInstructions.size(); ++i)
          if (k.counts[i]) counts[std::string(kKeyInstructions[i])] = k.counts[i];
        kernels.push_back({{"kernel", k.candidate}, {"instructions", k.instructions}, {"key", counts},
                           {"error", k.error.empty() ? json() : json(k.error)}});
      }
    } catch (const Error& e) {
      kernels.push_back({{"kernel", "(none)"}, {"error", e.what()}});
    }
    r["kernels"] = kernels;
  }

  // Each layer of the headline in fp32 and int8: time, MACs, bytes moved (the roofline's points).
  step("per-layer profile");
  json layers = json::array();
  auto profile = [&](const std::string& precision, const BuiltModel& b) {
    BenchOptions bo;
    bo.warmup = plan.warmup, bo.runs = std::max(3, plan.runs / 2), bo.profile = true;
    const BenchResult br = run_benchmark(*b.model, synthetic_inputs(b.model->graph(), 42), bo);
    const Graph& g = b.model->graph();
    for (const Step& s : b.model->steps()) {
      auto t = br.node_ms.find(s.node);
      if (t == br.node_ms.end()) continue;
      const Node& n = g.nodes[static_cast<size_t>(s.node)];
      int64_t weights = 0, acts = 0;
      for (ValueId v : n.inputs)
        if (v != kNoValue) (g.is_constant(v) ? weights : acts) += value_bytes(g.value(v));
      for (ValueId v : n.outputs)
        if (v != kNoValue) acts += value_bytes(g.value(v));
      layers.push_back({{"precision", precision}, {"node", n.name}, {"op", n.op}, {"kernel", s.choice.chosen->name},
                        {"ms", t->second}, {"macs", s.macs}, {"weight_bytes", weights}, {"activation_bytes", acts}});
    }
  };
  if (auto fp = fp32_of.find(headline); fp != fp32_of.end()) profile("fp32", fp->second);
  if (auto i8 = headline_builds.find("int8"); i8 != headline_builds.end()) profile("int8", i8->second);
  r["layers"] = layers;

  // The study's cross-compile experiment: the artifacts made here for Cortex-A72, run as they are
  // by the AArch64 lowbit under qemu.
  json aarch64 = json::array();
  if (!plan.qemu_cpus.empty()) {
    std::map<std::string, std::string> artifacts;
    for (const char* precision : {"fp32", "int8"}) {
      step(std::string("cross-compile ") + headline + " " + precision + " for cortex-a72");
      BuildOptions bo;
      bo.model = headline;
      bo.precision = parse_precision(precision);
      bo.target = parse_target("cortex-a72");
      bo.allow_foreign_target = true;
      bo.input_shapes = {{"input", {1, 3, plan.qemu_side, plan.qemu_side}}};
      const BuiltModel b = build_model(bo);
      const std::string path = o.work_dir + "/" + headline + "_" + precision + "_cortex-a72.lbm";
      save_artifact(path, b.graph, artifact_metadata(b, headline).dump());
      artifacts[precision] = path;
    }
    for (const std::string& cpu : plan.qemu_cpus)
      for (const char* precision : {"fp32", "int8"}) {
        step("qemu-aarch64 -cpu " + cpu + " " + precision);
        const std::string out = o.work_dir + "/qemu_" + cpu + "_" + precision + ".json";
        std::remove(out.c_str());
        // -cpu max has the dot product: the artifact, made for Cortex-A72, runs for that host.
        const std::string cmd = o.qemu + " -cpu " + cpu + " " + shell_quote(o.aarch64_lowbit) + " bench " +
                                shell_quote(artifacts[precision]) + (cpu == "cortex-a72" ? "" : " --target host") +
                                " --threads 1 --warmup 0 --runs " + std::to_string(plan.qemu_runs) + " --json " +
                                shell_quote(out) + " > " + shell_quote(out + ".log") + " 2>&1";
        const int rc = std::system(cmd.c_str());
        json row = {{"cpu", cpu}, {"precision", precision}, {"side", plan.qemu_side}, {"command", cmd}};
        std::ifstream f(out);
        if (rc != 0 || !f) {
          row["error"] = "exit status " + std::to_string(rc) + " (see " + out + ".log)";
        } else {
          const json j = json::parse(f, nullptr, false);
          if (j.is_discarded()) row["error"] = "unreadable JSON in " + out;
          else
            for (const char* k : {"median_ms", "min_ms", "first_run_ms", "features", "target", "runs"}) row[k] = j[k];
        }
        aarch64.push_back(row);
      }
  }
  // The study's scalar microbenchmark under QEMU TCG, with lowbit's own paths.
  if (!plan.qemu_cpus.empty()) {
    step("microbenchmark under qemu-aarch64 -cpu " + plan.qemu_cpus.front());
    const std::string out = o.work_dir + "/qemu_microbench.json";
    std::remove(out.c_str());
    const std::string cmd = o.qemu + " -cpu " + plan.qemu_cpus.front() + " " + shell_quote(o.aarch64_lowbit) +
                            " microbench --quick --no-bandwidth --json " + shell_quote(out) + " > " +
                            shell_quote(out + ".log") + " 2>&1";
    std::ifstream f(std::system(cmd.c_str()) == 0 ? out : std::string());
    const json j = f ? json::parse(f, nullptr, false) : json();
    r["aarch64_microbench"] = j.is_object() ? j : json{{"error", "see " + out + ".log"}};
  }
  r["aarch64"] = aarch64;
  r["notes"] = notes;
  r["elapsed_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (o.progress) o.progress(total, total, "done");
  return r;
}

void write_report(const json& r, const std::string& dir) {
  std::filesystem::create_directories(std::filesystem::path(dir) / "plots");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream f(std::filesystem::path(dir) / name);
    if (!f) throw Error("report: cannot write '" + (std::filesystem::path(dir) / name).string() + "'");
    f << text;
  };
  write("index.html", report_html(r));
  write("report.md", report_markdown(r));
  write("report.json", r.dump(1) + "\n");
  for (auto& [name, svg] : report_plots(r)) write("plots/" + name + ".svg", svg);
}

}  // namespace lowbit
