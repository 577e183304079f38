#pragma once
// The readers lowbit exposes to untrusted bytes, as fuzz targets: an ONNX model, an .lbm artifact,
// an .npy file and an image. Each takes the bytes, runs the real path behind the reader (import or
// load, validation, compile, and a run when the model is small enough to run quickly) and returns.
// lowbit::Error is the expected refusal and is swallowed; anything else (another exception, a
// crash, a sanitizer report, a hang) is a finding.
//
// Two drivers share these functions: libFuzzer (tests/fuzz/fuzz_main.cc, built by scripts/fuzz.sh
// with clang's -fsanitize=fuzzer,address,undefined) and the test suite's replay of the seed corpora
// and past findings (tests/fuzz_replay_test.cc, under ASan in the sanitized stage).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::fuzz {

// True when the reader accepted the input (and what followed ran), false when it refused it.
using Target = bool (*)(const uint8_t* data, size_t size);

bool onnx_model(const uint8_t* data, size_t size);
bool artifact(const uint8_t* data, size_t size);
bool npy(const uint8_t* data, size_t size);
bool image(const uint8_t* data, size_t size);

// Recomputes an .lbm file's checksum (FNV-1a-64 over the file but the 8 bytes at offset 48) in
// place, as a forger would; files shorter than the header are left as they are.
void reseal_artifact(std::string& bytes);

struct NamedTarget {
  const char* name;  // also the corpus folder: tests/fuzz/corpus/<name>
  Target run;
};
const std::vector<NamedTarget>& targets();

}  // namespace lowbit::fuzz
