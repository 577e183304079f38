#include "lowbit/api/bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>

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
  s.p95 = percentile(v, 0.95);
  s.p99 = percentile(v, 0.99);
  s.p999 = percentile(v, 0.999);
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

BenchScenario parse_bench_scenario(const std::string& s) {
  if (s == "single-stream") return BenchScenario::single_stream;
  if (s == "offline") return BenchScenario::offline;
  throw Error("unknown scenario '" + s + "': expected single-stream or offline");
}

const char* bench_scenario_name(BenchScenario s) { return s == BenchScenario::offline ? "offline" : "single-stream"; }

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

BenchResult run_benchmark(const CompiledModel& m, const std::vector<Tensor>& in, const BenchOptions& o) {
  if (o.runs < 1 || o.warmup < 0 || o.requests < 0 || o.streams < 0)
    throw Error("benchmark: runs >= 1, warmup, requests and streams >= 0");
  BenchResult r;
  r.scenario = o.scenario;
  auto t0 = std::chrono::steady_clock::now();
  m.run(in);
  r.first_run_ms = ms_since(t0);
  for (int i = 0; i < o.warmup; ++i) m.run(in);
  if (o.scenario == BenchScenario::single_stream) {
    std::vector<LayerTiming> timings;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o.runs; ++i) {
      t0 = std::chrono::steady_clock::now();
      if (o.profile) {
        m.run_profiled(in, timings);
        for (const LayerTiming& t : timings) r.node_ms[t.node] += t.ms / o.runs;
      } else {
        m.run(in);
      }
      r.ms.push_back(ms_since(t0));
    }
    r.wall_ms = ms_since(start);
    r.requests = o.runs;
  } else {
    // Offline: the batch's requests go to `streams` callers at once, each taking the next request
    // when it is done with one; the model's run contexts let them run side by side.
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    r.streams = o.streams ? o.streams : std::max(1, cores / std::max(1, m.threads()));
    r.requests = o.requests ? o.requests : o.runs;
    r.ms.assign(static_cast<size_t>(r.requests), 0.0);
    std::atomic<int> next{0};
    std::vector<std::thread> callers;
    std::vector<std::exception_ptr> failed(static_cast<size_t>(r.streams));
    const auto start = std::chrono::steady_clock::now();
    for (int c = 0; c < r.streams; ++c)
      callers.emplace_back([&, c] {
        try {
          for (int i; (i = next.fetch_add(1)) < r.requests;) {
            const auto t = std::chrono::steady_clock::now();
            m.run(in);
            r.ms[static_cast<size_t>(i)] = ms_since(t);
          }
        } catch (...) {
          failed[static_cast<size_t>(c)] = std::current_exception();
        }
      });
    for (std::thread& t : callers) t.join();
    r.wall_ms = ms_since(start);
    for (const std::exception_ptr& e : failed)
      if (e) std::rethrow_exception(e);
  }
  r.stats = latency_stats(r.ms);
  r.throughput = r.wall_ms > 0 ? 1e3 * r.requests / r.wall_ms : 0;
  return r;
}

nlohmann::json bench_summary(const CompiledModel& m, const std::string& model, const std::string& precision,
                             const BenchOptions& o, const BenchResult& r, double init_ms) {
  const LatencyStats& s = r.stats;
  nlohmann::json j = {{"model", model},
                      {"precision", precision},
                      {"target", m.target().name},
                      {"features", m.target().feature_string()},
                      {"caches", m.target().caches.to_string()},
                      {"threads", m.threads()},
                      {"scenario", bench_scenario_name(r.scenario)},
                      {"warmup", o.warmup},
                      {"runs", static_cast<int>(r.ms.size())},
                      {"init_ms", init_ms >= 0 ? nlohmann::json(init_ms) : nlohmann::json()},
                      {"first_run_ms", r.first_run_ms},
                      {"mean_ms", s.mean},
                      {"median_ms", s.median},
                      {"p90_ms", s.p90},
                      {"p95_ms", s.p95},
                      {"p99_ms", s.p99},
                      {"p999_ms", s.p999},
                      {"min_ms", s.min},
                      {"max_ms", s.max},
                      {"stddev_ms", s.stddev},
                      {"wall_ms", r.wall_ms},
                      {"throughput_per_s", r.throughput},
                      {"macs", model_macs(m)},
                      {"compile_ms", m.compile_ms()},
                      {"peak_activation_bytes", m.peak_activation_bytes()},
                      {"weight_bytes", m.weight_bytes()},
                      {"kernel_weight_bytes", m.kernel_weight_bytes()}};
  if (r.scenario == BenchScenario::offline) {
    j["requests"] = r.requests;
    j["streams"] = r.streams;
  }
  return j;
}

}  // namespace lowbit
