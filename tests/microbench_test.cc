// microbench/microbench.h: every path the host runs is measured, and natively none beats its
// documented bound (a path past it would mean a wrong MAC count in the table or a loop that does
// less than it says).
#include <gtest/gtest.h>

#include <set>

#include "lowbit/microbench/microbench.h"

namespace lowbit {
namespace {

TEST(Microbench, EveryPathTheHostRunsIsMeasuredWithinItsBound) {
  MicrobenchOptions o;
  o.quick = true;
  const MicrobenchResult r = run_microbench(o);
  ASSERT_GE(r.paths.size(), 2u);  // the scalar ones at least
  std::set<std::string> dtypes;
  for (const MicrobenchPath& p : r.paths) {
    SCOPED_TRACE(p.name);
    EXPECT_GT(p.gops, 0);
    EXPECT_GT(p.limit_per_cycle, 0);
    EXPECT_FALSE(p.limit_source.empty());
    dtypes.insert(p.dtype);
    if (r.emulated.empty()) {
      EXPECT_GT(p.macs_per_cycle, 0);
      EXPECT_LT(p.fraction, 1.25) << p.macs_per_cycle << " MACs a cycle against a bound of " << p.limit_per_cycle;
    }
  }
  EXPECT_TRUE(dtypes.count("fp32") && dtypes.count("int32"));
  if (r.emulated.empty()) {
    EXPECT_GT(r.ghz, 0.2);
  }
  EXPECT_GT(r.int_over_fp_scalar, 0);
  ASSERT_GE(r.bandwidth.size(), 3u);  // L1, L2, (L3,) DRAM
  EXPECT_EQ(r.bandwidth.front().level, "L1");
  EXPECT_EQ(r.bandwidth.back().level, "DRAM");
  for (const MicrobenchBandwidth& b : r.bandwidth) EXPECT_GT(b.gbps, 0) << b.level;
  const nlohmann::json j = microbench_json(r);
  EXPECT_EQ(j["paths"].size(), r.paths.size());
  EXPECT_TRUE(j.contains("int8_over_fp32_simd"));
  EXPECT_NE(microbench_text(r).find("scalar fp32"), std::string::npos);
}

TEST(Microbench, OnlyTheIsasAskedFor) {
  MicrobenchOptions o;
  o.quick = true;
  o.bandwidth = false;
  o.isas = {"baseline"};
  const MicrobenchResult r = run_microbench(o);
  ASSERT_EQ(r.paths.size(), 2u);
  for (const MicrobenchPath& p : r.paths) EXPECT_EQ(p.isa, "baseline");
  EXPECT_TRUE(r.bandwidth.empty());
  o.isas = {"no-such-isa"};
  EXPECT_TRUE(run_microbench(o).paths.empty());
}

}  // namespace
}  // namespace lowbit
