// Many threads running one compiled model at once (runtime/compiled_model.h, "Concurrency"):
// 4 callers x 50 runs each on one model, every output compared bitwise with what a lone caller
// computes on the same input. Each caller feeds inputs of its own (three per caller, in turn), so
// two runs that shared an arena, a pool or a kernel's scratch would mix one image into another's
// result. The models cover the kernel families that keep scratch: fp32 im2col / direct / Winograd
// / depthwise convs, pools and Gemm; int8 convs (packed B, expanded weights, shared panels),
// depthwise, Winograd, pools and Gemm; 4-bit weights; binary convs. scripts/test-tsan.sh runs this
// file under ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cctype>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "lowbit/common/error.h"
#include "lowbit/frontend/load_model.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/quant/guard.h"
#include "lowbit/quant/precision.h"
#include "lowbit/runtime/compiled_model.h"
#include "lowbit/runtime/thread_pool.h"

namespace lowbit {
namespace {

constexpr int kCallers = 4;
constexpr int kRunsPerCaller = 50;
constexpr int kInputsPerCaller = 3;

struct Case {
  const char* model;
  const char* precision;
  int64_t side;  // input H = W: small, so 200 runs stay quick under the sanitizers
  int threads;   // the model's own pool, per run context
};

std::string name_of(const testing::TestParamInfo<Case>& info) {
  std::string s = std::string(info.param.model) + "_" + info.param.precision + "_t" + std::to_string(info.param.threads);
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

std::unique_ptr<CompiledModel> build(const Case& c) {
  const Shape shape{1, 3, c.side, c.side};
  Graph g = load_model(c.model, {{"input", shape}});
  CompileOptions o;
  o.threads = c.threads;
  const Precision p = parse_precision(c.precision);
  if (!p.quantized()) return CompiledModel::compile(std::move(g), o);
  CompileOptions f = o;
  f.fuse_post_ops = false;
  auto fp32 = CompiledModel::compile(std::move(g), f);
  QuantizeOptions q;
  q.precision = p;
  q.synthetic_samples = 2;
  return build_quantized(*fp32, o, q, SlowPolicy::allow).model;
}

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].dtype() != b[i].dtype() || a[i].shape() != b[i].shape() ||
        std::memcmp(a[i].raw(), b[i].raw(), static_cast<size_t>(a[i].nbytes())) != 0)
      return false;
  return true;
}

class Concurrency : public testing::TestWithParam<Case> {};

TEST_P(Concurrency, ManyCallersOnOneModelMatchALoneCallerBitwise) {
  auto m = build(GetParam());
  // Inputs and the lone caller's outputs, before any overlap.
  std::vector<std::vector<Tensor>> inputs, expected;
  for (int i = 0; i < kCallers * kInputsPerCaller; ++i) {
    inputs.push_back(synthetic_inputs(m->graph(), 100 + static_cast<uint64_t>(i)));
    expected.push_back(m->run(inputs.back()));
  }
  // Distinct inputs give distinct outputs, or the check below could not see a mix-up.
  ASSERT_FALSE(same_bits(expected[0], expected[1]));

  std::atomic<int> mismatches{0}, errors{0};
  std::barrier start(kCallers);
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t)
    callers.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int r = 0; r < kRunsPerCaller; ++r) {
        const size_t i = static_cast<size_t>(t * kInputsPerCaller + r % kInputsPerCaller);
        try {
          std::vector<Tensor> y;
          if (r % 10 == 9) {  // the profiled and observed forms share the contexts too
            std::vector<LayerTiming> timings;
            y = t % 2 ? m->run_profiled(inputs[i], timings)
                      : m->run_observed(inputs[i], [](ValueId, const TensorView&) {});
          } else {
            y = m->run(inputs[i]);
          }
          if (!same_bits(y, expected[i])) ++mismatches;
        } catch (const std::exception& e) {
          if (errors++ == 0) ADD_FAILURE() << "caller " << t << ": " << e.what();
        }
      }
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  // The callers overlapped (each held a context of its own at some point).
  EXPECT_GE(m->contexts(), 2);
  // And a lone caller afterwards still gets the same bits.
  EXPECT_TRUE(same_bits(m->run(inputs[0]), expected[0]));
}

INSTANTIATE_TEST_SUITE_P(Models, Concurrency,
                         testing::Values(Case{"resnet18", "fp32", 64, 1}, Case{"resnet18", "fp32", 64, 2},
                                         Case{"resnet18", "int8", 64, 1}, Case{"resnet18", "int8", 64, 2},
                                         Case{"resnet18", "w4a8", 64, 2}, Case{"mobilenet_v2", "fp32", 64, 2},
                                         Case{"mobilenet_v2", "int8", 64, 2}, Case{"resnet18-binary", "fp32", 64, 2}),
                         name_of);

// A run whose input is wrong is refused before it takes a context: nothing leaks or stays busy.
TEST(Concurrency, RefusedRunsTakeNoContext) {
  CompileOptions o;
  o.threads = 1;
  auto m = CompiledModel::compile(load_model("resnet18", {{"input", {1, 3, 32, 32}}}), o);
  for (int i = 0; i < 3; ++i) EXPECT_THROW(m->run({Tensor(DType::f32, {1, 3, 8, 8})}), Error);
  EXPECT_NO_THROW(m->run(synthetic_inputs(m->graph(), 1)));
  EXPECT_EQ(m->contexts(), 1);
}

// The pool's hand-offs (runtime/thread_pool.cc): every task index runs exactly once, on a thread
// index in range, whichever way each side waits. Back-to-back forks keep the workers spinning;
// pauses longer than the spin (200 us) put them to sleep on the condition variable; a worker task
// that outlasts the spin puts the caller to sleep on its own. Run under ThreadSanitizer too.
TEST(ThreadPool, EveryTaskRunsOnceWhetherTheSidesSpinOrSleep) {
  using namespace std::chrono_literals;
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    ASSERT_EQ(pool.size(), threads);
    for (int round = 0; round < 60; ++round) {
      const int64_t tasks = round % 7 == 0 ? 0 : round % 5 == 0 ? 1 : 1 + (round * 37) % 97;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(tasks) + 1);
      std::atomic<int> bad_thread{0};
      const bool sleepy_worker = round % 4 == 1;  // a worker's task outlasts the caller's spin
      pool.parallel_for(tasks, [&](int64_t t, int thread) {
        if (thread < 0 || thread >= threads) bad_thread.fetch_add(1);
        hits[static_cast<size_t>(t)].fetch_add(1);
        if (sleepy_worker && thread != 0 && t % 9 == 0) std::this_thread::sleep_for(1ms);
      });
      for (int64_t t = 0; t < tasks; ++t)
        ASSERT_EQ(hits[static_cast<size_t>(t)].load(), 1) << "threads " << threads << " round " << round << " task " << t;
      EXPECT_EQ(bad_thread.load(), 0);
      if (round % 3 == 2) std::this_thread::sleep_for(round % 2 ? 1ms : 25ms);  // the workers block
    }
  }
  // A pool destroyed while its workers sleep, and one destroyed right after a fork.
  { ThreadPool idle(3); std::this_thread::sleep_for(20ms); }
  {
    ThreadPool busy(2);
    std::atomic<int64_t> sum{0};
    busy.parallel_for(1000, [&](int64_t t, int) { sum.fetch_add(t); });
    EXPECT_EQ(sum.load(), 999 * 1000 / 2);
  }
}

}  // namespace
}  // namespace lowbit
