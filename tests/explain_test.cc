// `explain` on every named target: every rejected candidate of every node has a specific reason,
// and what inspect reads of the plan is there whether or not this CPU can run the target.
#include <gtest/gtest.h>

#include <regex>

#include "lowbit/frontend/zoo/zoo.h"
#include "lowbit/common/error.h"
#include "lowbit/quant/guard.h"
#include "lowbit/target/target.h"

using namespace lowbit;

namespace {

// A reason must say what is missing or what does not fit, not merely that something failed.
void expect_specific(const std::string& target, const std::string& node, const Rejection& r) {
  SCOPED_TRACE(target + " / " + node + " / " + r.candidate->name);
  EXPECT_GE(r.reason.size(), 12u) << r.reason;
  static const std::regex generic("^(unsupported|not supported|not applicable|n/a|rejected|error|failed)\\.?$",
                                  std::regex::icase);
  EXPECT_FALSE(std::regex_match(r.reason, generic)) << r.reason;
}

}  // namespace

TEST(Explain, EveryRejectionOnEveryNamedTargetHasASpecificReason) {
  CompileOptions host;
  host.threads = 1;
  // Built once and copied: generating ResNet-50's 25M synthetic weights was most of this test
  // under qemu (65% natively, 537 s emulated with one build per target).
  const Graph resnet50 = build_zoo_model("resnet50");
  auto fp32 = CompiledModel::compile(resnet50, host);
  QuantizeOptions q;
  q.synthetic_samples = 1;
  const std::vector<Range> ranges = calibrate_model(*fp32, q);  // once: ranges do not depend on the target
  for (const std::string& name : named_targets()) {
    CompileOptions o;
    o.threads = 1;
    o.target = parse_target(name);
    o.allow_foreign_target = true;
    auto f = CompiledModel::compile(resnet50, o);
    QuantizedBuild b = build_quantized(*fp32, ranges, o, q, SlowPolicy::allow);
    int rejections = 0;
    for (const CompiledModel* m : {f.get(), b.model.get()})
      for (const Step& s : m->steps()) {
        ASSERT_NE(s.choice.chosen, nullptr);
        for (const Rejection& r : s.choice.rejected) {
          expect_specific(name, m->graph().nodes[size_t(s.node)].name, r);
          ++rejections;
        }
      }
    EXPECT_GT(rejections, 100) << name;  // every conv has several candidates on every target
    // What inspect and quantize --prepack read of a model for any target, runnable here or not (on
    // an AVX2-only host, `inspect --target cascadelake` dereferenced the VNNI kernels it had not made).
    for (const CompiledModel* m : {f.get(), b.model.get()}) {
      EXPECT_NO_THROW(m->graph_with_prepacked_weights()) << name;
      EXPECT_NO_THROW(m->prepacked_kernels()) << name;
      if (m->unrunnable_reason().empty()) EXPECT_NO_THROW(m->kernel_weight_bytes()) << name;  // 0 on reference kernels
      else EXPECT_THROW(m->kernel_weight_bytes(), Error) << name;
    }
  }
}

// Every feature parses on its own architecture only, and every feature set survives spec() ->
// parse_target(): `quantize` records the target as its spec, and the QDQ script re-reads it (an
// x86 host with avx512vpopcntdq once failed here: the parser took it for an AArch64 feature).
TEST(Targets, CacheSizesParseAndTheHostsAreSane) {
  EXPECT_EQ(parse_cache_size("48K"), 48 << 10);
  EXPECT_EQ(parse_cache_size("1024K"), 1 << 20);
  EXPECT_EQ(parse_cache_size("32768K"), 32 << 20);
  EXPECT_EQ(parse_cache_size("2M"), 2 << 20);
  EXPECT_EQ(parse_cache_size("2MB"), 2 << 20);
  EXPECT_EQ(parse_cache_size("65536"), 65536);
  for (const char* bad : {"", "K", "12Q", "1.5M", "-4K", "4K4", "99999999999999999999K"})
    EXPECT_EQ(parse_cache_size(bad), -1) << bad;
  const CacheSizes c = parse_cache_sizes("l2=2M,l1d=48K", CacheSizes{});
  EXPECT_EQ(c.l1d, 48 << 10);
  EXPECT_EQ(c.l2, 2 << 20);
  EXPECT_EQ(c.l3, 0);
  EXPECT_EQ(c.to_string(), "L1d 48 KB, L2 2 MB (LOWBIT_CACHES)");
  for (const char* bad : {"l2", "l2=", "l4=1M", "l1d=1K", "l2=8G", "l1d=48K;l2=1M"})
    EXPECT_THROW(parse_cache_sizes(bad), Error) << bad;
  // Whatever the host reports (sysfs, cpuid or the defaults), it is usable for blocking, and every
  // target parsed here carries it: the kernels are created on this machine.
  const CacheSizes& h = host_caches();
  EXPECT_GE(h.l1d, 4 << 10);
  EXPECT_GE(h.l2, h.l1d);
  EXPECT_FALSE(h.source.empty());
  EXPECT_EQ(parse_target("cortex-a72").caches.l2, h.l2);
  EXPECT_EQ(host_target().caches.l1d, h.l1d);
}

TEST(Targets, EverySpecParsesBackToTheSameFeatures) {
  for (unsigned f = 0; f < static_cast<unsigned>(Feature::count_); ++f) {
    const std::string name = feature_name(static_cast<Feature>(f));
    SCOPED_TRACE(name);
    const bool x86_ok = [&] {
      try {
        parse_target("x86-64+" + name);
        return true;
      } catch (const Error&) {
        return false;
      }
    }();
    const bool arm_ok = [&] {
      try {
        parse_target("cortex-a72+" + name);
        return true;
      } catch (const Error&) {
        return false;
      }
    }();
    EXPECT_NE(x86_ok, arm_ok) << "a feature belongs to exactly one architecture";
    Target t = parse_target(x86_ok ? "x86-64" : "cortex-a72");
    t.add(static_cast<Feature>(f));
    EXPECT_EQ(parse_target(t.spec()).features, t.features) << t.spec();
  }
  for (const std::string& n : named_targets()) {
    const Target t = parse_target(n);
    EXPECT_EQ(parse_target(t.spec()).features, t.features) << n << " -> " << t.spec();
  }
  const Target host = host_target();
  EXPECT_EQ(parse_target(host.spec()).features, host.features) << host.spec();
}
