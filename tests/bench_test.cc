// api/bench.h: the statistics and scenarios `lowbit bench`, Python's benchmark() and the C API
// report, on a small model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "lowbit/api/bench.h"
#include "lowbit/api/build.h"
#include "lowbit/common/error.h"
#include "lowbit/io/synthetic.h"
#include "small_models.h"

namespace lowbit {
namespace {

TEST(Bench, PercentilesInterpolateBetweenSortedRuns) {
  std::vector<double> ms(1000);
  std::iota(ms.begin(), ms.end(), 1.0);  // 1 .. 1000, shuffled below
  std::reverse(ms.begin(), ms.end());
  const LatencyStats s = latency_stats(ms);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 1000);
  EXPECT_DOUBLE_EQ(s.median, 500.5);
  EXPECT_NEAR(s.p95, 950.05, 1e-9);
  EXPECT_NEAR(s.p999, 999.001, 1e-9);
  EXPECT_THROW(latency_stats({}), Error);
  EXPECT_EQ(parse_bench_scenario("offline"), BenchScenario::offline);
  EXPECT_STREQ(bench_scenario_name(parse_bench_scenario("single-stream")), "single-stream");
  EXPECT_THROW(parse_bench_scenario("server"), Error);
}

TEST(Bench, SingleStreamAndOfflineReportWhatTheyRan) {
  BuiltModel b = build_model(test::small_resnet18(1, 32));
  EXPECT_GT(b.build_ms, 0);
  const std::vector<Tensor> in = synthetic_inputs(b.model->graph(), 3);
  BenchOptions o;
  o.warmup = 1, o.runs = 5, o.profile = true;
  const BenchResult one = run_benchmark(*b.model, in, o);
  EXPECT_EQ(one.ms.size(), 5u);
  EXPECT_GT(one.first_run_ms, 0);
  EXPECT_GE(one.wall_ms, std::accumulate(one.ms.begin(), one.ms.end(), 0.0) * 0.999);
  EXPECT_FALSE(one.node_ms.empty());  // profiled: each node's mean per request
  nlohmann::json j = bench_summary(*b.model, "resnet18", b.precision, o, one, b.build_ms);
  for (const char* k : {"init_ms", "first_run_ms", "p95_ms", "p999_ms", "throughput_per_s", "wall_ms"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["scenario"], "single-stream");
  EXPECT_EQ(j["runs"], 5);
  EXPECT_FALSE(j.contains("streams"));
  EXPECT_TRUE(bench_summary(*b.model, "resnet18", b.precision, o, one)["init_ms"].is_null());

  o.scenario = BenchScenario::offline;
  o.profile = false;
  o.requests = 9, o.streams = 3;  // more callers than cores: they share the model's run contexts
  const BenchResult off = run_benchmark(*b.model, in, o);
  EXPECT_EQ(off.requests, 9);
  EXPECT_EQ(off.streams, 3);
  ASSERT_EQ(off.ms.size(), 9u);
  for (double x : off.ms) EXPECT_GT(x, 0);
  EXPECT_NEAR(off.throughput, 9e3 / off.wall_ms, 1e-9);
  j = bench_summary(*b.model, "resnet18", b.precision, o, off, b.build_ms);
  EXPECT_EQ(j["scenario"], "offline");
  EXPECT_EQ(j["requests"], 9);
  EXPECT_EQ(j["streams"], 3);
}

}  // namespace
}  // namespace lowbit
