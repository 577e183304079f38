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
  avx512vbmi,       // vpermi2b (byte permutes over two registers): Ice Lake, Sapphire Rapids, Zen 4+
  count_,
};

const char* feature_name(Feature f);

// Per-core data cache sizes in bytes, which the kernels' blocking is derived from (B panels sized
// for L1, weight and pixel blocks for L2). Read from the machine that creates the kernels: sysfs,
// else cpuid (leaf 4 on Intel, 0x8000001D on AMD), else the defaults below (Zen 3's L1 and L2, the
// sizes the constants they replace were tuned on). LOWBIT_CACHES="l1d=48K,l2=2M" overrides them.
struct CacheSizes {
  int64_t l1d = 32 << 10;
  int64_t l2 = 512 << 10;
  int64_t l3 = 0;  // the whole last level, shared; 0 when unknown
  std::string source = "default";
  // "L1d 48 KB, L2 1 MB, L3 32 MB (sysfs)"
  std::string to_string() const;
};

// Parses "l1d=48K,l2=1M,l3=32M" (sizes in bytes, K, M or G; any subset) over `base`. Throws
// lowbit::Error on a malformed list or a size outside 4 KB .. 4 GB.
CacheSizes parse_cache_sizes(const std::string& spec, CacheSizes base = {});
// Parses a sysfs cache size ("48K", "1024K", "32768K", "2M"); -1 if malformed.
int64_t parse_cache_size(const std::string& text);

struct Target {
  std::string name;  // "host", "znver3", "x86-64+avx2+fma", ...
  Arch arch = Arch::x86_64;
  uint32_t features = 0;  // bit set of Feature
  // The caches of the machine that creates the kernels (this one: kernels for a CPU the host
  // cannot run are chosen but never created), so every target parsed here carries the host's.
  CacheSizes caches;

  bool has(Feature f) const { return features & (1u << static_cast<unsigned>(f)); }
  void add(Feature f) { features |= 1u << static_cast<unsigned>(f); }
  // "sse41 avx2 fma"
  std::string feature_string() const;
  // A spec parse_target() turns back into this target: "x86-64+sse41+avx2+fma".
  std::string spec() const;
  // Features `required` has that this target lacks, as text ("avx512vnni"); empty if none.
  std::string missing(const Target& required) const;
};

// The CPU we run on (cpuid), capped by LOWBIT_ISA=generic|avx2|... when set; its caches as
// host_caches() gives them.
Target host_target();
// The host's per-core caches (LOWBIT_CACHES, else sysfs, else cpuid, else the defaults).
CacheSizes host_caches();
// Named targets (x86-64, x86-64-v3, znver3, skylake-avx512, cascadelake, alderlake,
// sapphirerapids, cortex-a72, neoverse-n1, armv8.6-a) or explicit lists "x86-64+avx2+fma".
// "host" gives host_target(). Throws lowbit::Error on an unknown name or feature.
Target parse_target(const std::string& spec);
std::vector<std::string> named_targets();

}  // namespace lowbit
