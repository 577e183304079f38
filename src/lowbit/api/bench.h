#pragma once
// Timing a compiled model: warm-ups, timed runs, latency statistics, and the summary every
// front end reports with the same keys (`lowbit bench --json`, the Python package's benchmark()).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lowbit/runtime/compiled_model.h"

namespace lowbit {

struct LatencyStats {
  double mean = 0, median = 0, p90 = 0, p99 = 0, min = 0, max = 0, stddev = 0;
};

LatencyStats latency_stats(std::vector<double> ms);  // ms must not be empty
// `warmup` untimed runs, then `runs` timed ones: each run's wall time in ms.
std::vector<double> time_runs(const CompiledModel& m, const std::vector<Tensor>& in, int warmup, int runs);
// Multiply-accumulates of one run (the convs' and GEMMs').
int64_t model_macs(const CompiledModel& m);
// The summary: model, precision, target, features, caches, threads, warmup, runs, mean_ms,
// median_ms, p90_ms, p99_ms, min_ms, max_ms, stddev_ms, macs, compile_ms, peak_activation_bytes,
// weight_bytes, kernel_weight_bytes.
nlohmann::json bench_summary(const CompiledModel& m, const std::string& model, const std::string& precision,
                             int warmup, int runs, const LatencyStats& s);

}  // namespace lowbit
