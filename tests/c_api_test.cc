// The C API (include/lowbit/lowbit.h), called as a C program calls it: statuses with lowbit's
// messages for every refusal, outputs bit-identical to the C++ front door's, concurrent runs on one
// session, options by name (api/options.h). tests/scripts/test_install_package.sh builds a real C
// program against the installed library.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "lowbit/api/build.h"
#include "lowbit/api/options.h"
#include "lowbit/common/error.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/lowbit.h"

namespace {

using ::testing::HasSubstr;

// Owns a status for the duration of an assertion.
struct Status {
  lowbit_status* s;
  explicit Status(lowbit_status* st) : s(st) {}
  ~Status() { lowbit_status_free(s); }
  lowbit_code code() const { return lowbit_status_code(s); }
  std::string message() const { return lowbit_status_message(s); }
};

lowbit_options* options(const std::vector<std::pair<const char*, const char*>>& kv) {
  lowbit_options* o = nullptr;
  EXPECT_EQ(lowbit_options_create(&o), nullptr);
  for (auto [k, v] : kv) {
    Status st(lowbit_options_set(o, k, v));
    EXPECT_EQ(st.code(), LOWBIT_OK) << k << "=" << v << ": " << st.message();
  }
  return o;
}

struct Session {
  lowbit_session* s = nullptr;
  Session(const char* model, const std::vector<std::pair<const char*, const char*>>& kv) {
    lowbit_options* o = options(kv);
    Status st(lowbit_session_create(model, o, &s));
    lowbit_options_free(o);
    EXPECT_EQ(st.code(), LOWBIT_OK) << st.message();
  }
  ~Session() { lowbit_session_free(s); }
};

const std::vector<std::pair<const char*, const char*>> kSmall = {{"input_shape", "input=1x3x32x32"}, {"threads", "1"}};

std::vector<float> run(const lowbit_session* s, const std::vector<float>& x, lowbit_code want = LOWBIT_OK) {
  lowbit_tensor_info ii, oi;
  EXPECT_EQ(lowbit_session_input(s, 0, &ii), nullptr);
  EXPECT_EQ(lowbit_session_output(s, 0, &oi), nullptr);
  std::vector<float> y(1000);
  lowbit_tensor in{LOWBIT_FLOAT32, ii.rank, ii.shape, const_cast<float*>(x.data()), x.size() * sizeof(float)};
  lowbit_tensor out{LOWBIT_FLOAT32, oi.rank, oi.shape, y.data(), y.size() * sizeof(float)};
  Status st(lowbit_session_run(s, &in, 1, &out, 1));
  EXPECT_EQ(st.code(), want) << st.message();
  return y;
}

std::vector<float> ramp(size_t n, float k = 1.f) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = k * static_cast<float>((i * 7919u) % 255u) / 127.5f - 1.f;
  return x;
}

TEST(CApi, RunsLikeTheCxxFrontDoorBitForBit) {
  for (const char* precision : {"fp32", "int8"}) {
    SCOPED_TRACE(precision);
    std::vector<std::pair<const char*, const char*>> kv = kSmall;
    kv.push_back({"precision", precision});
    kv.push_back({"calibration_samples", "2"});
    Session c("resnet18", kv);
    ASSERT_NE(c.s, nullptr);
    ASSERT_EQ(lowbit_session_input_count(c.s), 1u);
    ASSERT_EQ(lowbit_session_output_count(c.s), 1u);
    lowbit_tensor_info ii;
    ASSERT_EQ(lowbit_session_input(c.s, 0, &ii), nullptr);
    EXPECT_STREQ(ii.name, "input");
    EXPECT_EQ(ii.dtype, LOWBIT_FLOAT32);
    ASSERT_EQ(ii.rank, 4u);
    EXPECT_EQ(ii.shape[3], 32);

    lowbit::BuildOptions b;
    b.model = "resnet18";
    for (auto [k, v] : kv) lowbit::set_build_option(b, k, v);
    const lowbit::BuiltModel cxx = lowbit::build_model(b);
    const std::vector<float> x = ramp(3 * 32 * 32);
    const lowbit::Tensor xt = lowbit::Tensor::wrap(lowbit::DType::f32, {1, 3, 32, 32}, x.data(), nullptr);
    const lowbit::Tensor want = cxx.model->run({xt})[0];
    const std::vector<float> got = run(c.s, x);
    ASSERT_EQ(std::memcmp(got.data(), want.data<float>(), 1000 * sizeof(float)), 0);
  }
}

TEST(CApi, EveryRefusalIsAStatusNamingWhatWasWrong) {
  lowbit_session* s = nullptr;
  {
    Status st(lowbit_session_create("no_such_model", nullptr, &s));
    EXPECT_EQ(st.code(), LOWBIT_ERROR);
    EXPECT_THAT(st.message(), HasSubstr("no_such_model"));
    EXPECT_EQ(s, nullptr);
  }
  {
    Status st(lowbit_session_create(nullptr, nullptr, &s));
    EXPECT_EQ(st.code(), LOWBIT_INVALID_ARGUMENT);
  }
  {
    Status st(lowbit_session_create("resnet18", nullptr, nullptr));
    EXPECT_EQ(st.code(), LOWBIT_INVALID_ARGUMENT);
    EXPECT_THAT(st.message(), HasSubstr("out is NULL"));
  }
  {  // ONNX bytes that are not a model: refused by the importer, not a crash.
    const char junk[] = "\x0a\xff\xff\xff\xff\x0f not protobuf";
    Status st(lowbit_session_create_from_onnx(junk, sizeof junk, nullptr, &s));
    EXPECT_EQ(st.code(), LOWBIT_ERROR);
    EXPECT_FALSE(st.message().empty());
    EXPECT_EQ(s, nullptr);
  }
  lowbit_options* o = nullptr;
  ASSERT_EQ(lowbit_options_create(&o), nullptr);
  {
    Status st(lowbit_options_set(o, "precison", "int8"));
    EXPECT_EQ(st.code(), LOWBIT_ERROR);
    EXPECT_THAT(st.message(), HasSubstr("unknown option 'precison'"));
    EXPECT_THAT(st.message(), HasSubstr("precision"));  // the list of what is known
  }
  for (auto [k, v] : std::vector<std::pair<const char*, const char*>>{{"precision", "int7"},
                                                                     {"threads", "-1"},
                                                                     {"threads", "2x"},
                                                                     {"input_shape", "input=1x3x0x4"},
                                                                     {"input_shape", "input=1x99999999999999999999"},
                                                                     {"max_memory", "lots"},
                                                                     {"mean", "1,2"},
                                                                     {"optimize", "maybe"},
                                                                     {"target", "pentium"}}) {
    Status st(lowbit_options_set(o, k, v));
    EXPECT_EQ(st.code(), LOWBIT_ERROR) << k << "=" << v;
    EXPECT_FALSE(st.message().empty());
  }
  {
    Status st(lowbit_options_set(o, nullptr, "x"));
    EXPECT_EQ(st.code(), LOWBIT_INVALID_ARGUMENT);
  }
  lowbit_options_free(o);
  {
    Status st(lowbit_set_isa_cap("avx9000"));
    EXPECT_EQ(st.code(), LOWBIT_ERROR);
    EXPECT_THAT(st.message(), HasSubstr("avx9000"));
  }
  char* json = nullptr;
  EXPECT_EQ(Status(lowbit_session_explain(nullptr, &json)).code(), LOWBIT_INVALID_ARGUMENT);
  EXPECT_EQ(lowbit_status_code(nullptr), LOWBIT_OK);
  EXPECT_STREQ(lowbit_status_message(nullptr), "");
  lowbit_status_free(nullptr);
}

TEST(CApi, TensorsThatDoNotMatchTheModelAreRefusedBeforeTheRun) {
  Session c("resnet18", kSmall);
  ASSERT_NE(c.s, nullptr);
  lowbit_tensor_info ii, oi;
  ASSERT_EQ(lowbit_session_input(c.s, 0, &ii), nullptr);
  ASSERT_EQ(lowbit_session_output(c.s, 0, &oi), nullptr);
  std::vector<float> x = ramp(3 * 32 * 32), y(1000);
  const int64_t wrong_shape[4] = {1, 3, 32, 31};
  auto try_run = [&](lowbit_tensor in, lowbit_tensor out, size_t nin = 1, size_t nout = 1) {
    return Status(lowbit_session_run(c.s, &in, nin, &out, nout));
  };
  const lowbit_tensor in{LOWBIT_FLOAT32, ii.rank, ii.shape, x.data(), x.size() * 4};
  const lowbit_tensor out{LOWBIT_FLOAT32, oi.rank, oi.shape, y.data(), y.size() * 4};
  struct Case {
    lowbit_tensor in, out;
    size_t nin, nout;
    std::string expect;
  };
  std::vector<Case> cases = {
      {{LOWBIT_UINT8, ii.rank, ii.shape, x.data(), x.size() * 4}, out, 1, 1, "input 'input' must be float32, got uint8"},
      {{LOWBIT_FLOAT32, 4, wrong_shape, x.data(), x.size() * 4}, out, 1, 1,
       "input 'input' must have shape 1x3x32x32, got 1x3x32x31"},
      {{LOWBIT_FLOAT32, 3, ii.shape, x.data(), x.size() * 4}, out, 1, 1, "must have shape 1x3x32x32, got 1x3x32"},
      {{LOWBIT_FLOAT32, ii.rank, ii.shape, x.data(), x.size() * 4 - 1}, out, 1, 1,
       "input 'input' needs 12288 bytes, the buffer has 12287"},
      {{LOWBIT_FLOAT32, ii.rank, ii.shape, nullptr, x.size() * 4}, out, 1, 1, "input 'input': data is NULL"},
      {{LOWBIT_FLOAT32, 2, nullptr, x.data(), x.size() * 4}, out, 1, 1, "shape is NULL"},
      {in, {LOWBIT_FLOAT32, oi.rank, oi.shape, y.data(), 3996}, 1, 1, "output '"},
      {in, out, 2, 1, "the model has 1 input(s), 2 given"},
      {in, out, 1, 0, "the model has 1 output(s), 0 given"},
  };
  for (const Case& k : cases) {
    Status st = try_run(k.in, k.out, k.nin, k.nout);
    EXPECT_EQ(st.code(), LOWBIT_INVALID_ARGUMENT) << k.expect;
    EXPECT_THAT(st.message(), HasSubstr(k.expect));
  }
  // An output whose data is NULL is skipped; the others are written.
  EXPECT_EQ(try_run(in, {LOWBIT_FLOAT32, oi.rank, oi.shape, nullptr, 0}).code(), LOWBIT_OK);
  lowbit_tensor_info none;
  EXPECT_EQ(Status(lowbit_session_input(c.s, 1, &none)).code(), LOWBIT_INVALID_ARGUMENT);
}

TEST(CApi, ManyThreadsRunOneSessionAndMatchALoneCaller) {
  Session c("resnet18", {{"input_shape", "input=1x3x32x32"}, {"threads", "1"}, {"precision", "int8"}, {"calibration_samples", "2"}});
  ASSERT_NE(c.s, nullptr);
  std::vector<std::vector<float>> inputs, want;
  for (int t = 0; t < 4; ++t) {
    inputs.push_back(ramp(3 * 32 * 32, 1.f + 0.25f * static_cast<float>(t)));
    want.push_back(run(c.s, inputs.back()));
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 10; ++r) mismatches[t] += run(c.s, inputs[t]) != want[t];
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

TEST(CApi, ReportsAreTheLibrarysJsonAndLogsReachTheCallback) {
  struct Log {
    int notes = 0, warnings = 0;
  } log;
  lowbit_set_log_callback(
      [](lowbit_log_level level, const char*, void* user) {
        auto* l = static_cast<Log*>(user);
        (level == LOWBIT_LOG_WARNING ? l->warnings : l->notes)++;
      },
      &log);
  // w4a8 with nothing kept at 8 bits: the sub-byte notes go to the sink.
  Session c("resnet18", {{"input_shape", "input=1x3x32x32"}, {"threads", "1"}, {"precision", "w4a8"},
                         {"calibration_samples", "1"}, {"keep_8bit", "none"}, {"on_slow", "allow"}});
  lowbit_set_log_callback(nullptr, nullptr);
  ASSERT_NE(c.s, nullptr);
  EXPECT_GT(log.notes + log.warnings, 0);

  char* text = nullptr;
  ASSERT_EQ(lowbit_session_explain(c.s, &text), nullptr);
  const auto explain = nlohmann::json::parse(text);
  lowbit_free(text);
  EXPECT_EQ(explain["precision"], "w4a8");
  ASSERT_FALSE(explain["nodes"].empty());
  bool any_reason = false;
  for (const auto& n : explain["nodes"]) {
    EXPECT_FALSE(n["kernel"].get<std::string>().empty());
    for (const auto& r : n["rejected"]) any_reason |= !r["reason"].get<std::string>().empty();
  }
  EXPECT_TRUE(any_reason);

  ASSERT_EQ(lowbit_session_inspect(c.s, &text), nullptr);
  const auto inspect = nlohmann::json::parse(text);
  lowbit_free(text);
  EXPECT_GT(inspect["weight_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(inspect["nodes"].size(), inspect["steps"].get<size_t>());

  ASSERT_EQ(lowbit_session_benchmark(c.s, 2, 0, &text), nullptr);
  const auto bench = nlohmann::json::parse(text);
  lowbit_free(text);
  EXPECT_EQ(bench["runs"], 2);
  EXPECT_GT(bench["median_ms"].get<double>(), 0);
  EXPECT_EQ(Status(lowbit_session_benchmark(c.s, 0, 0, &text)).code(), LOWBIT_INVALID_ARGUMENT);

  ASSERT_EQ(lowbit_targets(&text), nullptr);
  EXPECT_EQ(std::string(text).rfind("host\n", 0), 0u);
  EXPECT_THAT(text, HasSubstr("cortex-a72"));
  lowbit_free(text);
}

TEST(CApi, ASavedArtifactRunsTheSameBits) {
  Session c("resnet18", {{"input_shape", "input=1x3x32x32"}, {"threads", "1"}, {"precision", "int8"}, {"calibration_samples", "2"}});
  ASSERT_NE(c.s, nullptr);
  const std::string path = ::testing::TempDir() + "c_api_" + std::to_string(::getpid()) + ".lbm";
  ASSERT_EQ(lowbit_session_save(c.s, path.c_str()), nullptr);
  Session a(path.c_str(), {{"threads", "1"}});
  ASSERT_NE(a.s, nullptr);
  const std::vector<float> x = ramp(3 * 32 * 32);
  EXPECT_EQ(run(a.s, x), run(c.s, x));
  std::remove(path.c_str());
  EXPECT_EQ(Status(lowbit_session_save(c.s, "/nonexistent-dir/x.lbm")).code(), LOWBIT_ERROR);
}

}  // namespace
