#include "fuzz_targets.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "lowbit/api/bench.h"
#include "lowbit/artifact/artifact.h"
#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/frontend/load_model.h"
#include "lowbit/io/image.h"
#include "lowbit/io/npy.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/runtime/compiled_model.h"

namespace lowbit::fuzz {
namespace {

// Runs stay cheap so that a fuzzer spends its time on parsing and validation, not on convolutions
// or per-element reference loops: models over these bounds are compiled (plans, packing) but not run.
constexpr int64_t kMaxRunMacs = 20'000'000;
constexpr int64_t kMaxArenaBytes = 64 << 20;
// Elements the steps write, over all of them: the reference kernels of ops without MACs (Resize,
// Pad, Tile) cost per element, and a Resize writing a 64 MiB output took 24 s under ASan and
// coverage (a fuzz_onnx timeout, tests/fuzz/findings/onnx/), not a hang but most of a run's budget.
constexpr int64_t kMaxRunElements = 4'000'000;

int64_t written_elements(const CompiledModel& m) {
  int64_t n = 0;
  for (const Step& s : m.steps())
    for (ValueId v : m.graph().nodes[static_cast<size_t>(s.node)].outputs) {
      if (v == kNoValue) continue;
      int64_t e = 1;
      for (int64_t d : m.graph().value(v).shape) e = d > 0 && e < (int64_t{1} << 40) ? e * d : e;
      n += e;
    }
  return n;
}

// The readers take paths (they map or stream files): each input goes through one file per
// process, rewritten every time, in shared memory where there is some.
std::string scratch_file(const char* ext, const uint8_t* data, size_t size) {
  static const std::string dir = std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path().string();
  const std::string path = dir + "/lowbit-fuzz-" + std::to_string(::getpid()) + ext;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

void quiet() {
  static const bool once = [] {
    set_log_sink([](LogLevel, const std::string&) {});  // warnings about odd models are expected
    return true;
  }();
  (void)once;
}

void compile_and_run(Graph g) {
  CompileOptions o;
  o.threads = 1;
  o.max_memory = kMaxArenaBytes;
  auto m = CompiledModel::compile(std::move(g), o);
  if (model_macs(*m) > kMaxRunMacs || written_elements(*m) > kMaxRunElements) return;
  m->run(synthetic_inputs(m->graph(), 1));
}

}  // namespace

bool onnx_model(const uint8_t* data, size_t size) {
  quiet();
  try {
    compile_and_run(load_model_bytes(std::string(reinterpret_cast<const char*>(data), size)));
  } catch (const Error&) {
    return false;
  }
  return true;
}

// The format's checksum from its description (artifact.h), not from the library's code, so that a
// test of the reader does not share its arithmetic.
void reseal_artifact(std::string& b) {
  constexpr size_t kChecksumAt = 48;
  if (b.size() < kChecksumAt + 8) return;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < b.size(); ++i)
    if (i < kChecksumAt || i >= kChecksumAt + 8) h = (h ^ static_cast<uint8_t>(b[i])) * 0x100000001b3ULL;
  std::memcpy(b.data() + kChecksumAt, &h, 8);
}

bool artifact(const uint8_t* data, size_t size) {
  quiet();
  // Resealed as a forger would: a mutated file then reaches the header, metadata and graph checks
  // behind the checksum in every build, not only in a fuzzing one.
  std::string bytes(reinterpret_cast<const char*>(data), size);
  reseal_artifact(bytes);
  const std::string path = scratch_file(".lbm", reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  try {
    compile_and_run(load_artifact(path).graph);
  } catch (const Error&) {
    return false;
  }
  return true;
}

bool npy(const uint8_t* data, size_t size) {
  const std::string path = scratch_file(".npy", data, size);
  try {
    const Tensor t = load_npy(path);
    volatile int64_t sink = t.nbytes();  // the shape and dtype it claims are what it holds
    (void)sink;
  } catch (const Error&) {
    return false;
  }
  return true;
}

bool image(const uint8_t* data, size_t size) {
  const std::string path = scratch_file(".img", data, size);
  try {
    // 4 MP: a 900-byte JPEG declaring 65535 x 1006 pixels (within the library's 8192 x 8192 cap)
    // takes over 20 s to decode under ASan with coverage, the fuzzer's timeout; the decode of a
    // large image is the same code as a small one's.
    const Image img = load_image(path, int64_t{1} << 22);
    ImagePreprocess p;
    image_to_tensor(img, {1, 3, 7, 9}, p);
    p.resize = ResizeMode::pad;
    image_to_tensor(img, {1, 3, 9, 7}, p);
  } catch (const Error&) {
    return false;
  }
  return true;
}

const std::vector<NamedTarget>& targets() {
  static const std::vector<NamedTarget> t = {
      {"onnx", onnx_model}, {"artifact", artifact}, {"npy", npy}, {"image", image}};
  return t;
}

}  // namespace lowbit::fuzz
