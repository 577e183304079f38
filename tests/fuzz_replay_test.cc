// The fuzz targets (tests/fuzz/fuzz_targets.h) in every test run: each seed of
// tests/fuzz/corpus/<target>, each past finding of tests/fuzz/findings/<target>, and a fixed set of
// mutations of every seed (bit flips, truncations, spliced and overwritten bytes, boundary
// integers), so the sanitized stage checks the readers on thousands of hostile inputs even where
// clang's libFuzzer (scripts/fuzz.sh) is not run. A target passes an input when it returns: a
// lowbit::Error is the expected refusal, anything else escapes and fails here naming the input.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fuzz/fuzz_targets.h"

namespace {

namespace fs = std::filesystem;
using lowbit::fuzz::NamedTarget;

std::vector<std::pair<std::string, std::string>> files_in(const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> r;
  if (!fs::is_directory(dir)) return r;
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (const fs::path& p : paths) {
    std::ifstream f(p, std::ios::binary);
    r.push_back({p.filename().string(), std::string((std::istreambuf_iterator<char>(f)), {})});
  }
  return r;
}

// True when the target accepted the input; an exception other than lowbit::Error fails the test.
bool run(const NamedTarget& t, const std::string& what, const std::string& bytes) {
  try {
    return t.run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  } catch (const std::exception& e) {
    ADD_FAILURE() << t.name << " " << what << ": escaped the reader: " << e.what();
  } catch (...) {
    ADD_FAILURE() << t.name << " " << what << ": escaped the reader: a non-standard exception";
  }
  return false;
}

// Deterministic mutations of one seed: the kinds of damage libFuzzer's mutators do first.
std::vector<std::string> mutations(const std::string& seed, uint32_t salt, int count) {
  std::mt19937 rng(salt);
  std::vector<std::string> r;
  const int64_t boundary[] = {0, -1, 1, 0x7f, 0x80, 0xff, 0x7fffffff, int64_t(0x80000000), int64_t(1) << 40,
                              INT64_MAX, INT64_MIN};
  for (int i = 0; i < count && !seed.empty(); ++i) {
    std::string m = seed;
    auto at = [&](size_t span) { return m.size() > span ? rng() % (m.size() - span) : 0; };
    switch (i % 6) {
      case 0:  // flip a few bits
        for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) m[at(0)] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:  // truncate
        m.resize(rng() % m.size());
        break;
      case 2: {  // a boundary integer written over 1, 2, 4 or 8 bytes
        const int64_t v = boundary[rng() % std::size(boundary)];
        const size_t w = size_t{1} << (rng() % 4);
        if (m.size() >= w) std::memcpy(&m[at(w)], &v, w);
        break;
      }
      case 3: {  // a run of bytes overwritten with one value
        const size_t n = 1 + rng() % 16, p = at(n);
        for (size_t k = p; k < std::min(m.size(), p + n); ++k) m[k] = static_cast<char>(rng());
        break;
      }
      case 4: {  // a chunk of the seed copied elsewhere in it (duplicated fields, nested messages)
        const size_t n = 1 + rng() % std::min<size_t>(64, m.size()), from = at(n), to = at(0);
        m.insert(to, seed.substr(from, n));
        break;
      }
      default:  // bytes removed from the middle
        m.erase(at(0), 1 + rng() % 32);
        break;
    }
    r.push_back(std::move(m));
  }
  return r;
}

class FuzzReplay : public ::testing::TestWithParam<NamedTarget> {};

TEST_P(FuzzReplay, SeedsFindingsAndMutationsAreRefusedOrRunNeverCrash) {
  const NamedTarget& t = GetParam();
  const fs::path root = fs::path(LOWBIT_SOURCE_DIR) / "tests" / "fuzz";
  const auto seeds = files_in(root / "corpus" / t.name);
  ASSERT_GE(seeds.size(), 3u) << "tests/fuzz/corpus/" << t.name << " needs seeds";
  // A seed is a valid input the reader must accept (and compile and run, for models), unless its
  // name says it is refused: then the reader must refuse it. Either way the test sees that the
  // seeds reach the paths they are there for.
  for (const auto& [name, bytes] : seeds)
    EXPECT_EQ(run(t, "seed " + name, bytes), name.rfind("refused_", 0) != 0) << t.name << " seed " << name;
  for (const auto& [name, bytes] : files_in(root / "findings" / t.name)) run(t, "finding " + name, bytes);
  // 60 mutations per seed: the whole set costs seconds natively and stays bounded under ASan.
  uint32_t salt = 1;
  for (const auto& [name, bytes] : seeds) {
    int k = 0;
    for (const std::string& m : mutations(bytes, salt++, 60)) run(t, "seed " + name + " mutation " + std::to_string(k++), m);
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplay, ::testing::ValuesIn(lowbit::fuzz::targets()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
