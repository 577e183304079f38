#pragma once
// Timing a compiled model as onnxruntime_perf_test and MLPerf's LoadGen time one: how long the
// model took to make (init), its first run on its own (cold caches, the weights' and arena's first
// touch), warm-ups, then the scenario's timed requests. Every front end reports the result with
// the same keys (`lowbit bench --json`, the Python package's benchmark(), the C API).
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lowbit/runtime/compiled_model.h"

namespace lowbit {

struct LatencyStats {
  double mean = 0, median = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0, min = 0, max = 0, stddev = 0;
};

LatencyStats latency_stats(std::vector<double> ms);  // ms must not be empty
// `warmup` untimed runs, then `runs` timed ones: each run's wall time in ms.
std::vector<double> time_runs(const CompiledModel& m, const std::vector<Tensor>& in, int warmup, int runs);
// Multiply-accumulates of one run (the convs' and GEMMs').
int64_t model_macs(const CompiledModel& m);

// single_stream: one request at a time, the next when the last is done (MLPerf SingleStream,
// onnxruntime_perf_test's default): latency. offline: `requests` issued at once to `streams`
// callers sharing the model (each run on its own run context, api docs/architecture.md), until
// all are done (MLPerf Offline): throughput.
enum class BenchScenario { single_stream, offline };
BenchScenario parse_bench_scenario(const std::string& s);
const char* bench_scenario_name(BenchScenario s);

struct BenchOptions {
  BenchScenario scenario = BenchScenario::single_stream;
  int warmup = 10;
  int runs = 100;     // single-stream: timed requests
  int requests = 0;   // offline: requests in the batch (0: runs)
  int streams = 0;    // offline: concurrent callers (0: the cores over the model's threads, at least 1)
  bool profile = false;  // single-stream: per-node times too (run_profiled)
};

struct BenchResult {
  BenchScenario scenario = BenchScenario::single_stream;
  double first_run_ms = 0;  // the first request, before the warm-ups
  std::vector<double> ms;   // each timed request's latency
  LatencyStats stats;       // of ms
  int requests = 0, streams = 1;
  double wall_ms = 0;       // all the timed requests, first issued to last done
  double throughput = 0;    // requests per second over wall_ms
  std::map<NodeId, double> node_ms;  // profile: each node's mean ms per request
};

BenchResult run_benchmark(const CompiledModel& m, const std::vector<Tensor>& in, const BenchOptions& o);

// The summary: model, precision, target, features, caches, threads, scenario, warmup, runs,
// init_ms (what the caller measured making the model: load, quantize, compile; null if not
// given), first_run_ms, mean_ms, median_ms, p90_ms, p95_ms, p99_ms, p999_ms, min_ms, max_ms,
// stddev_ms, wall_ms, throughput_per_s (and, offline, requests and streams), macs, compile_ms,
// peak_activation_bytes, weight_bytes, kernel_weight_bytes.
nlohmann::json bench_summary(const CompiledModel& m, const std::string& model, const std::string& precision,
                             const BenchOptions& o, const BenchResult& r, double init_ms = -1);

}  // namespace lowbit
