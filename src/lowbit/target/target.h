#pragma once
// A Target is an architecture plus a feature set. One Target value flows from the command line to
// the dispatcher; no kernel reads CPUID.
#include <cstdint>
#include <string>
#include <vector>

namespace lowbit {

enum class Arch : uint8_t { x86_64, aarch64 };

enum class Feature : uint8_t {
  sse41,
  avx2,
  fma,
  avx512f,
  avx512bw,
  avx512vnni,
  avxvnni,
  amx_int8,
  neon,
  dotprod,
  i8mm,
  avx512vpopcntdq,  // vpopcntq: Ice Lake, Sapphire Rapids, Zen 4+ (not Skylake-X / Cascade Lake)
  count_,
};

const char* feature_name(Feature f);

struct Target {
  std::string name;  // "host", "znver3", "x86-64+avx2+fma", ...
  Arch arch = Arch::x86_64;
  uint32_t features = 0;  // bit set of Feature

  bool has(Feature f) const { return features & (1u << static_cast<unsigned>(f)); }
  void add(Feature f) { features |= 1u << static_cast<unsigned>(f); }
  // "sse41 avx2 fma"
  std::string feature_string() const;
  // A spec parse_target() turns back into this target: "x86-64+sse41+avx2+fma".
  std::string spec() const;
  // Features `required` has that this target lacks, as text ("avx512vnni"); empty if none.
  std::string missing(const Target& required) const;
};

// The CPU we run on (cpuid), capped by LOWBIT_ISA=generic|avx2|... when set.
Target host_target();
// Named targets (x86-64, x86-64-v3, znver3, skylake-avx512, cascadelake, alderlake,
// sapphirerapids, cortex-a72, neoverse-n1, armv8.6-a) or explicit lists "x86-64+avx2+fma".
// "host" gives host_target(). Throws lowbit::Error on an unknown name or feature.
Target parse_target(const std::string& spec);
std::vector<std::string> named_targets();

}  // namespace lowbit
