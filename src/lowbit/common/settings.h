#pragma once
// The process-wide settings the environment can give, read from it once (at first use) and only
// here, each with an API equivalent that overrides it: an embedding program should not have to
// setenv() before loading lowbit, and getenv() racing a setenv() elsewhere is undefined.
//   LOWBIT_ISA      set_isa_cap        cap the detected CPU features: generic|sse41|avx2|avx512|...
//   LOWBIT_CACHES   set_cache_override cache sizes for blocking: l1d=48K,l2=2M[,l3=...]
//   LOWBIT_VERBOSE  set_verbose        traces to the log sink: dispatch, qdq, rounding, calibration, equalize (comma-separated)
// Changes apply to models compiled afterwards; compiled models keep what they were built with.
#include <string>

namespace lowbit {

struct Settings {
  std::string isa_cap;
  std::string cache_override;
  std::string verbose;
};

Settings settings();  // a copy: safe to call from any thread
void set_isa_cap(const std::string& cap);
void set_cache_override(const std::string& caches);
void set_verbose(const std::string& topics);
// True when `topic` is one of the verbose topics.
bool verbose(const std::string& topic);

}  // namespace lowbit
