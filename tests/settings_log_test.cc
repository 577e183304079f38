// The process settings (common/settings.h) and the log sink (common/log.h): what an embedding
// program uses instead of environment variables and stderr.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/common/settings.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/runtime/compiled_model.h"

namespace lowbit {
namespace {

using ::testing::HasSubstr;

// x (1x16x10x10) -> Conv 3x3 (16 -> 16) -> Relu.
Graph small_conv() {
  Graph g;
  const ValueId x = g.add_value("x", DType::f32, {1, 16, 10, 10}, true);
  g.inputs = {x};
  Tensor w(DType::f32, {16, 16, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(i % 7) * 0.01f - 0.03f;
  const ValueId wv = g.add_constant("w", w);
  const ValueId y = g.add_value("y"), z = g.add_value("z");
  Attributes a;
  a.set("pads", std::vector<int64_t>(4, 1));
  g.add_node("Conv", "conv", {x, wv}, {y}, a);
  g.add_node("Relu", "relu", {y}, {z});
  g.outputs = {z};
  return g;
}

// Restores the settings and the sink a test changed.
class SettingsLog : public testing::Test {
 protected:
  void SetUp() override { saved_ = settings(); }
  void TearDown() override {
    set_isa_cap(saved_.isa_cap);
    set_cache_override(saved_.cache_override);
    set_verbose(saved_.verbose);
    set_log_sink(nullptr);
  }
  Settings saved_;
};

TEST_F(SettingsLog, DispatchTraceGoesToTheSinkNotStderr) {
  std::vector<std::pair<LogLevel, std::string>> got;
  set_log_sink([&](LogLevel l, const std::string& m) { got.emplace_back(l, m); });
  set_verbose("dispatch");
  testing::internal::CaptureStderr();
  CompiledModel::compile(small_conv(), CompileOptions{});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0].first, LogLevel::trace);
  EXPECT_THAT(got[0].second, HasSubstr("lowbit dispatch: "));
  EXPECT_THAT(got[0].second, HasSubstr("conv"));
  // Off again: nothing more arrives.
  got.clear();
  set_verbose("");
  CompiledModel::compile(small_conv(), CompileOptions{});
  EXPECT_TRUE(got.empty());
}

TEST_F(SettingsLog, DefaultSinkWritesPrefixedLinesToStderr) {
  testing::internal::CaptureStderr();
  log_warning("something slow");
  log_note("a note");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "lowbit: warning: something slow\nlowbit: note: a note\n");
}

TEST_F(SettingsLog, SinkSeesWholeMessagesFromManyThreads) {
  std::mutex mu;
  std::vector<std::string> got;
  set_log_sink([&](LogLevel, const std::string& m) {
    std::lock_guard<std::mutex> lock(mu);
    got.push_back(m);
  });
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([t] {
      for (int i = 0; i < 100; ++i) log_note("thread " + std::to_string(t) + " message " + std::to_string(i));
    });
  for (auto& t : ts) t.join();
  ASSERT_EQ(got.size(), 400u);
  for (const std::string& m : got) EXPECT_THAT(m, testing::MatchesRegex("thread [0-3] message [0-9]+"));
}

TEST_F(SettingsLog, IsaCapAppliesToLaterCompiles) {
  set_isa_cap("generic");
  EXPECT_EQ(host_target().features, 0u);
  auto m = CompiledModel::compile(small_conv(), CompileOptions{});
  for (const Step& s : m->steps()) EXPECT_TRUE(s.choice.chosen->features.empty()) << s.choice.chosen->name;
  const std::vector<Tensor> in = synthetic_inputs(m->graph(), 3);
  EXPECT_NO_THROW(m->run(in));
  set_isa_cap(saved_.isa_cap);
  EXPECT_EQ(host_target().features, CompileOptions{}.target.features);
}

TEST_F(SettingsLog, CacheOverrideAppliesAndBadOnesAreRefused) {
  set_cache_override("l1d=32K,l2=1M");
  EXPECT_EQ(host_caches().l1d, 32 << 10);
  EXPECT_EQ(host_caches().l2, 1 << 20);
  EXPECT_EQ(host_target().caches.l2, 1 << 20);
  set_cache_override("l1d=lots");
  EXPECT_THROW(host_caches(), Error);
}

TEST_F(SettingsLog, VerboseTopicsAreAList) {
  set_verbose("qdq,dispatch");
  EXPECT_TRUE(verbose("dispatch"));
  EXPECT_TRUE(verbose("qdq"));
  EXPECT_FALSE(verbose("dispatc"));
  set_verbose("all");
  EXPECT_TRUE(verbose("qdq"));
}

}  // namespace
}  // namespace lowbit
