// lowbit bench: warm-ups, timed runs, latency statistics, optional per-layer profile.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>

#include "cli.h"
#include "lowbit/api/bench.h"
#include "lowbit/common/error.h"

namespace lowbit::cli {
namespace {

}  // namespace

void register_bench(CLI::App& app) {
  struct Opts {
    ModelOptions m;
    int warmup = 10, runs = 100;
    std::string json;
    bool profile = false;
    std::string against;
    std::string scenario = "single-stream";
    int batch = 0, streams = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("bench", "time a model: warm-ups, then timed runs (mean, median, p90, p99)");
  add_model_options(*cmd, o->m);
  cmd->add_option("--warmup", o->warmup, "untimed runs first (default 10)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--runs", o->runs, "timed runs (default 100)")->check(CLI::PositiveNumber);
  cmd->add_option("--json", o->json, "also write the results as JSON to this file");
  cmd->add_flag("--profile", o->profile, "per-layer table sorted by time, with MACs and GFLOP/s");
  cmd->add_option("--against", o->against,
                  "also time this model (same precision and options) alternating with MODEL, and print the "
                  "ratio: resnet18-binary --precision int8 --against resnet18");
  cmd->add_option("--scenario", o->scenario,
                  "single-stream: one request at a time, latency (MLPerf SingleStream, onnxruntime_perf_test); "
                  "offline: --batch requests at once to --streams callers sharing the model, throughput (MLPerf Offline)")
      ->check(CLI::IsMember({"single-stream", "offline"}));
  cmd->add_option("--batch", o->batch, "offline: requests in the batch (default --runs)")->check(CLI::PositiveNumber);
  cmd->add_option("--streams", o->streams, "offline: concurrent callers (default: the cores over --threads)")
      ->check(CLI::PositiveNumber);
  cmd->callback([o] {
    BuiltModel built = build_model(o->m);
    auto& model = built.model;
    const std::string precision = built.precision;
    const Graph& g = model->graph();
    auto in = random_inputs(g);
    BenchOptions bo;
    bo.scenario = parse_bench_scenario(o->scenario);
    bo.warmup = o->warmup, bo.runs = o->runs, bo.requests = o->batch, bo.streams = o->streams;
    bo.profile = o->profile;
    if (o->profile && bo.scenario != BenchScenario::single_stream) throw Error("--profile times single-stream runs");
    const BenchResult r = run_benchmark(*model, in, bo);
    const LatencyStats& s = r.stats;
    const int64_t macs = model_macs(*model);
    std::printf("model %s  precision %s  target %s [%s]  threads %d\ncaches %s\n", o->m.model.c_str(),
                precision.c_str(), model->target().name.c_str(), model->target().feature_string().c_str(),
                model->threads(), model->target().caches.to_string().c_str());
    std::printf("init %.0f ms (load, quantize, compile; compile alone %.0f ms)  first run %.2f ms\n", built.build_ms,
                model->compile_ms(), r.first_run_ms);
    std::printf("weights %s (kernel layouts %s)  peak activations %s  %.2f GMACs\n",
                human_bytes(model->weight_bytes()).c_str(), human_bytes(model->kernel_weight_bytes()).c_str(),
                human_bytes(model->peak_activation_bytes()).c_str(), static_cast<double>(macs) / 1e9);
    if (const int pre = model->prepacked_kernels())
      std::printf("prepacked: %d kernel(s) read their weights in place from the artifact (quantize --prepack)\n", pre);
    if (r.scenario == BenchScenario::offline)
      std::printf("offline: %d requests on %d stream(s) of %d thread(s) after %d warm-up(s): %.1f requests/s (%.0f ms in "
                  "all); per request median %.2f ms  p90 %.2f ms  p99 %.2f ms\n",
                  r.requests, r.streams, model->threads(), o->warmup, r.throughput, r.wall_ms, s.median, s.p90, s.p99);
    else
      std::printf("%d warm-up + %d timed runs: mean %.2f ms  median %.2f ms  p90 %.2f ms  p95 %.2f ms  p99 %.2f ms  "
                  "p99.9 %.2f ms  min %.2f ms  stddev %.2f ms  (%.1f GFLOP/s at the median)\n",
                  o->warmup, o->runs, s.mean, s.median, s.p90, s.p95, s.p99, s.p999, s.min, s.stddev,
                  2.0 * static_cast<double>(macs) / (s.median * 1e6));
    nlohmann::json layers = nlohmann::json::array();
    if (o->profile) {
      std::vector<std::pair<NodeId, double>> rows(r.node_ms.begin(), r.node_ms.end());
      std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second > b.second; });
      double total = 0;
      for (auto& row : rows) total += row.second;
      std::printf("\n%-34s %-18s %-36s %9s %6s %10s %9s\n", "node", "op", "kernel", "ms", "%", "MMACs", "GFLOP/s");
      for (auto& [nid, sum] : rows) {
        const Step& st = *std::find_if(model->steps().begin(), model->steps().end(),
                                       [&](const Step& x) { return x.node == nid; });
        const Node& n = g.nodes[static_cast<size_t>(nid)];
        const double avg = sum;  // per request
        double gf = st.macs ? 2.0 * static_cast<double>(st.macs) / (avg * 1e6) : 0.0;
        std::printf("%-34.34s %-18.18s %-36.36s %9.3f %6.1f %10.1f %9.1f\n", n.name.c_str(), n.op.c_str(),
                    st.choice.chosen->name.c_str(), avg, 100.0 * sum / total, static_cast<double>(st.macs) / 1e6, gf);
        layers.push_back({{"node", n.name}, {"op", n.op}, {"kernel", st.choice.chosen->name}, {"ms", avg},
                          {"macs", st.macs}, {"gflops", gf}});
      }
    }
    // A quantized model is only worth it if it beats fp32 (and a sub-byte one if it beats int8):
    // measure them here, side by side, alternating so that a disturbed stretch hits both.
    nlohmann::json vs_fp32, vs_int8;
    const bool quantized = precision != "fp32";
    const bool subbyte = quantized && precision != "int8";
    if (quantized && o->m.model.size() > 4 && o->m.model.substr(o->m.model.size() - 4) == ".lbm") {
      std::printf("\n(%s artifact: run `lowbit bench SOURCE --precision %s` to compare against fp32%s in one run)\n",
                  precision.c_str(), precision.c_str(), subbyte ? " and int8" : "");
    } else if (quantized) {
      ModelOptions f = o->m;
      f.precision = "fp32";
      auto fp = compile_model(f);
      std::unique_ptr<CompiledModel> i8;
      if (subbyte) {
        ModelOptions m8 = o->m;
        m8.precision = "int8";
        i8 = compile_model(m8);
      }
      const int runs = std::min(o->runs, 30), warm = std::min(o->warmup, 3);
      std::vector<double> f_ms, q_ms, i_ms;
      for (int round = 0; round < 3; ++round) {  // alternating rounds
        for (double x : time_runs(*fp, in, warm, runs / 3 + 1)) f_ms.push_back(x);
        for (double x : time_runs(*model, in, warm, runs / 3 + 1)) q_ms.push_back(x);
        if (i8)
          for (double x : time_runs(*i8, in, warm, runs / 3 + 1)) i_ms.push_back(x);
      }
      LatencyStats fs = latency_stats(f_ms), qs = latency_stats(q_ms);
      double ratio = fs.median / qs.median;
      vs_fp32 = {{"fp32_median_ms", fs.median}, {precision + "_median_ms", qs.median}, {"speedup", ratio}};
      const int each = static_cast<int>(q_ms.size());
      if (ratio >= 1.0)
        std::printf("\n%s vs fp32 (same run, %d runs each): %s median %.2f ms, fp32 median %.2f ms: %s is %.2fx faster\n",
                    precision.c_str(), each, precision.c_str(), qs.median, fs.median, precision.c_str(), ratio);
      else
        std::printf("\n!!! WARNING: %s is SLOWER than fp32 on this machine: %s median %.2f ms vs fp32 %.2f ms "
                    "(%.2fx). Run `lowbit explain --precision %s` and `bench --profile` for both precisions. !!!\n",
                    precision.c_str(), precision.c_str(), qs.median, fs.median, ratio, precision.c_str());
      if (i8) {
        LatencyStats is = latency_stats(i_ms);
        const double r8 = is.median / qs.median;
        vs_int8 = {{"int8_median_ms", is.median}, {precision + "_median_ms", qs.median}, {"speedup", r8}};
        std::printf("%s vs int8 (same run): %s median %.2f ms, int8 median %.2f ms: %.2fx %s; weights %s vs %s\n",
                    precision.c_str(), precision.c_str(), qs.median, is.median, r8 >= 1.0 ? r8 : 1.0 / r8,
                    r8 >= 1.0 ? "faster" : "SLOWER", human_bytes(model->weight_bytes()).c_str(),
                    human_bytes(i8->weight_bytes()).c_str());
      }
    }
    // Another model side by side (a binary network against its real-valued counterpart): rounds
    // alternate, so that a disturbed stretch of a shared host hits both.
    nlohmann::json vs_against;
    if (!o->against.empty()) {
      ModelOptions a = o->m;
      a.model = o->against;
      auto other = compile_model(a);
      const auto in2 = random_inputs(other->graph());
      const int rounds = 6, per = std::max(1, std::min(o->runs, 60) / rounds), warm = std::min(o->warmup, 3);
      std::vector<double> m_ms, a_ms;
      for (int round = 0; round < rounds; ++round) {
        for (double x : time_runs(*model, in, warm, per)) m_ms.push_back(x);
        for (double x : time_runs(*other, in2, warm, per)) a_ms.push_back(x);
      }
      const LatencyStats ms1 = latency_stats(m_ms), as = latency_stats(a_ms);
      vs_against = {{"model", o->against}, {"median_ms", as.median}, {"min_ms", as.min},
                    {"this_median_ms", ms1.median}, {"this_min_ms", ms1.min}, {"speedup", as.median / ms1.median}};
      std::printf("\n%s vs %s (%s, same run, %d runs each): median %.2f vs %.2f ms (%.2fx), min %.2f vs %.2f ms "
                  "(%.2fx); weights %s vs %s\n",
                  o->m.model.c_str(), o->against.c_str(), precision.c_str(), static_cast<int>(m_ms.size()), ms1.median,
                  as.median, as.median / ms1.median, ms1.min, as.min, as.min / ms1.min,
                  human_bytes(model->weight_bytes()).c_str(), human_bytes(other->weight_bytes()).c_str());
    }
    if (!o->json.empty()) {
      nlohmann::json j = bench_summary(*model, o->m.model, precision, bo, r, built.build_ms);
      if (o->profile) j["layers"] = layers;
      if (!vs_fp32.is_null()) j["vs_fp32"] = vs_fp32;
      if (!vs_int8.is_null()) j["vs_int8"] = vs_int8;
      if (!vs_against.is_null()) j["vs_against"] = vs_against;
      std::ofstream f(o->json);
      if (!f) throw Error("cannot write '" + o->json + "'");
      f << j.dump(2) << "\n";
    }
  });
}

}  // namespace lowbit::cli
