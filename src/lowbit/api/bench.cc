#include "lowbit/api/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "lowbit/common/error.h"

namespace lowbit {
namespace {

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.size() == 1) return sorted[0];
  double pos = p * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

LatencyStats latency_stats(std::vector<double> v) {
  if (v.empty()) throw Error("latency statistics need at least one run");
  std::sort(v.begin(), v.end());
  LatencyStats s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.median = percentile(v, 0.5);
  s.p90 = percentile(v, 0.9);
  s.p99 = percentile(v, 0.99);
  s.min = v.front();
  s.max = v.back();
  double var = 0;
  for (double x : v) var += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(var / static_cast<double>(v.size()));
  return s;
}

std::vector<double> time_runs(const CompiledModel& m, const std::vector<Tensor>& in, int warmup, int runs) {
  for (int i = 0; i < warmup; ++i) m.run(in);
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    m.run(in);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

int64_t model_macs(const CompiledModel& m) {
  int64_t macs = 0;
  for (const Step& st : m.steps()) macs += st.macs;
  return macs;
}

nlohmann::json bench_summary(const CompiledModel& m, const std::string& model, const std::string& precision,
                             int warmup, int runs, const LatencyStats& s) {
  return {{"model", model},
          {"precision", precision},
          {"target", m.target().name},
          {"features", m.target().feature_string()},
          {"caches", m.target().caches.to_string()},
          {"threads", m.threads()},
          {"warmup", warmup},
          {"runs", runs},
          {"mean_ms", s.mean},
          {"median_ms", s.median},
          {"p90_ms", s.p90},
          {"p99_ms", s.p99},
          {"min_ms", s.min},
          {"max_ms", s.max},
          {"stddev_ms", s.stddev},
          {"macs", model_macs(m)},
          {"compile_ms", m.compile_ms()},
          {"peak_activation_bytes", m.peak_activation_bytes()},
          {"weight_bytes", m.weight_bytes()},
          {"kernel_weight_bytes", m.kernel_weight_bytes()}};
}

}  // namespace lowbit
