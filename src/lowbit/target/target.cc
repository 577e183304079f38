#include "lowbit/target/target.h"

#include <cstdlib>
#include <map>
#include <sstream>

#include "lowbit/common/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace lowbit {
namespace {

// One row per Feature, in enum order: its name and the architecture it belongs to. (The arch was once
// inferred from the enum order, "every feature from neon on is AArch64", and avx512vpopcntdq,
// appended after i8mm, made every x86 host with it unparsable from its own spec.)
struct FeatureRow {
  const char* name;
  Arch arch;
};
constexpr FeatureRow kFeatures[] = {
    {"sse41", Arch::x86_64},   {"avx2", Arch::x86_64},     {"fma", Arch::x86_64},  {"avx512f", Arch::x86_64},
    {"avx512bw", Arch::x86_64}, {"avx512vnni", Arch::x86_64}, {"avxvnni", Arch::x86_64}, {"amx_int8", Arch::x86_64},
    {"neon", Arch::aarch64},   {"dotprod", Arch::aarch64}, {"i8mm", Arch::aarch64}, {"avx512vpopcntdq", Arch::x86_64}};
static_assert(sizeof(kFeatures) / sizeof(kFeatures[0]) == static_cast<size_t>(Feature::count_));

Target make(const std::string& name, Arch arch, std::initializer_list<Feature> fs) {
  Target t;
  t.name = name;
  t.arch = arch;
  for (Feature f : fs) t.add(f);
  return t;
}

using F = Feature;
const std::map<std::string, Target>& named() {
  static const std::map<std::string, Target> m = {
      {"x86-64", make("x86-64", Arch::x86_64, {F::sse41})},
      {"x86-64-v3", make("x86-64-v3", Arch::x86_64, {F::sse41, F::avx2, F::fma})},
      {"znver3", make("znver3", Arch::x86_64, {F::sse41, F::avx2, F::fma})},
      {"skylake-avx512",
       make("skylake-avx512", Arch::x86_64, {F::sse41, F::avx2, F::fma, F::avx512f, F::avx512bw})},
      {"cascadelake",
       make("cascadelake", Arch::x86_64, {F::sse41, F::avx2, F::fma, F::avx512f, F::avx512bw, F::avx512vnni})},
      {"alderlake", make("alderlake", Arch::x86_64, {F::sse41, F::avx2, F::fma, F::avxvnni})},
      {"sapphirerapids", make("sapphirerapids", Arch::x86_64,
                              {F::sse41, F::avx2, F::fma, F::avx512f, F::avx512bw, F::avx512vnni, F::avxvnni,
                               F::amx_int8, F::avx512vpopcntdq})},
      {"cortex-a72", make("cortex-a72", Arch::aarch64, {F::neon})},
      {"neoverse-n1", make("neoverse-n1", Arch::aarch64, {F::neon, F::dotprod})},
      {"armv8.6-a", make("armv8.6-a", Arch::aarch64, {F::neon, F::dotprod, F::i8mm})},
  };
  return m;
}

Target detect() {
  Target t;
  t.name = "host";
#if defined(__x86_64__)
  t.arch = Arch::x86_64;
  unsigned a = 0, b = 0, c = 0, d = 0;
  __cpuid(1, a, b, c, d);
  bool sse41 = c & bit_SSE4_1, fma = c & bit_FMA, osxsave = c & bit_OSXSAVE, avx = c & bit_AVX;
  // The OS must save the wide registers, or the instructions fault even when cpuid lists them.
  uint64_t xcr0 = 0;
  if (osxsave) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
  }
  bool ymm_ok = avx && (xcr0 & 0x6) == 0x6;
  bool zmm_ok = ymm_ok && (xcr0 & 0xe0) == 0xe0;
  bool amx_ok = (xcr0 & 0x60000) == 0x60000;
  if (sse41) t.add(F::sse41);
  unsigned b7 = 0, c7 = 0, d7 = 0, a71 = 0;
  if (__get_cpuid_count(7, 0, &a, &b7, &c7, &d7)) {
    if (ymm_ok && (b7 & bit_AVX2)) t.add(F::avx2);
    if (ymm_ok && fma) t.add(F::fma);
    if (zmm_ok && (b7 & bit_AVX512F)) t.add(F::avx512f);
    if (zmm_ok && (b7 & bit_AVX512BW)) t.add(F::avx512bw);
    if (zmm_ok && (c7 & (1u << 11))) t.add(F::avx512vnni);
    if (zmm_ok && (c7 & (1u << 14))) t.add(F::avx512vpopcntdq);
    if (amx_ok && (d7 & (1u << 25))) t.add(F::amx_int8);
    unsigned b71 = 0, c71 = 0, d71 = 0;
    if (__get_cpuid_count(7, 1, &a71, &b71, &c71, &d71) && ymm_ok && (a71 & (1u << 4))) t.add(F::avxvnni);
  }
#elif defined(__aarch64__)
  // The kernel reports what EL0 may execute (the ID registers themselves trap on older kernels).
  t.arch = Arch::aarch64;
  const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
  const bool asimd = hwcap & HWCAP_ASIMD;
  if (asimd) t.add(F::neon);
  if (asimd && (hwcap & HWCAP_ASIMDDP)) t.add(F::dotprod);
  if (asimd && (hwcap2 & HWCAP2_I8MM)) t.add(F::i8mm);
#endif
  return t;
}

// LOWBIT_ISA caps the host: generic drops every SIMD feature lowbit's kernels use.
Target apply_isa_cap(Target t, const char* cap) {
  if (!cap || !*cap) return t;
  std::string c = cap;
  std::map<std::string, std::vector<Feature>> keep = {
      {"generic", {}},
      {"sse41", {F::sse41}},
      {"avx2", {F::sse41, F::avx2, F::fma}},
      {"avxvnni", {F::sse41, F::avx2, F::fma, F::avxvnni}},
      {"avx512", {F::sse41, F::avx2, F::fma, F::avx512f, F::avx512bw, F::avx512vpopcntdq}},
      {"avx512vnni",
       {F::sse41, F::avx2, F::fma, F::avx512f, F::avx512bw, F::avx512vnni, F::avxvnni, F::avx512vpopcntdq}},
      {"neon", {F::neon}},
      {"dotprod", {F::neon, F::dotprod}},
  };
  auto it = keep.find(c);
  if (it == keep.end()) throw Error("LOWBIT_ISA=" + c + " is unknown (use generic, sse41, avx2, avxvnni, avx512, avx512vnni, neon, dotprod)");
  uint32_t mask = 0;
  for (Feature f : it->second) mask |= 1u << static_cast<unsigned>(f);
  t.features &= mask;
  t.name = "host(LOWBIT_ISA=" + c + ")";
  return t;
}

}  // namespace

const char* feature_name(Feature f) { return kFeatures[static_cast<size_t>(f)].name; }

std::string Target::feature_string() const {
  std::string s;
  for (unsigned i = 0; i < static_cast<unsigned>(Feature::count_); ++i)
    if (features & (1u << i)) s += (s.empty() ? "" : " ") + std::string(kFeatures[i].name);
  return s.empty() ? "(none)" : s;
}

std::string Target::missing(const Target& required) const {
  std::string s;
  for (unsigned i = 0; i < static_cast<unsigned>(Feature::count_); ++i)
    if ((required.features & (1u << i)) && !(features & (1u << i)))
      s += (s.empty() ? "" : ", ") + std::string(kFeatures[i].name);
  if (required.arch != arch) s = (arch == Arch::x86_64 ? "aarch64 (host is x86-64)" : "x86-64 (host is aarch64)");
  return s;
}

std::string Target::spec() const {
  // The base names carry the fewest features of their arch; every feature is then listed.
  std::string s = arch == Arch::x86_64 ? "x86-64" : "cortex-a72";
  for (unsigned i = 0; i < static_cast<unsigned>(Feature::count_); ++i)
    if (features & (1u << i)) s += "+" + std::string(kFeatures[i].name);
  return s;
}

Target host_target() {
  static const Target detected = detect();
  return apply_isa_cap(detected, std::getenv("LOWBIT_ISA"));
}

Target parse_target(const std::string& spec) {
  if (spec.empty() || spec == "host" || spec == "native") return host_target();
  std::vector<std::string> parts;
  std::stringstream ss(spec);
  for (std::string p; std::getline(ss, p, '+');) parts.push_back(p);
  auto it = named().find(parts[0]);
  if (it == named().end()) {
    std::string names;
    for (auto& [n, _] : named()) names += " " + n;
    throw Error("unknown target '" + parts[0] + "' (known:" + names + ", host, or NAME+feature+...)");
  }
  Target t = it->second;
  t.name = spec;
  for (size_t i = 1; i < parts.size(); ++i) {
    bool found = false;
    for (unsigned f = 0; f < static_cast<unsigned>(Feature::count_); ++f)
      if (parts[i] == kFeatures[f].name) {
        if (kFeatures[f].arch != t.arch)
          throw Error("feature '" + parts[i] + "' does not exist on " + parts[0]);
        t.add(static_cast<Feature>(f));
        found = true;
      }
    if (!found) throw Error("unknown CPU feature '" + parts[i] + "' in target '" + spec + "'");
  }
  return t;
}

std::vector<std::string> named_targets() {
  std::vector<std::string> v;
  for (auto& [n, _] : named()) v.push_back(n);
  return v;
}

}  // namespace lowbit
