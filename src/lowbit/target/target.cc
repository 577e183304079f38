#include "lowbit/target/target.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "lowbit/common/error.h"
#include "lowbit/common/settings.h"

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
    {"neon", Arch::aarch64},   {"dotprod", Arch::aarch64}, {"i8mm", Arch::aarch64}, {"avx512vpopcntdq", Arch::x86_64},
    {"avx512vbmi", Arch::x86_64}};
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
                               F::amx_int8, F::avx512vpopcntdq, F::avx512vbmi})},
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
    if (zmm_ok && (c7 & (1u << 1))) t.add(F::avx512vbmi);
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
      {"avx512", {F::sse41, F::avx2, F::fma, F::avx512f, F::avx512bw, F::avx512vpopcntdq, F::avx512vbmi}},
      {"avx512vnni",
       {F::sse41, F::avx2, F::fma, F::avx512f, F::avx512bw, F::avx512vnni, F::avxvnni, F::avx512vpopcntdq,
        F::avx512vbmi}},
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

// Level 1 data, 2 and 3 from /sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}.
bool caches_from_sysfs(CacheSizes& c) {
  bool any = false;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream lf(dir + "level"), tf(dir + "type"), sf(dir + "size");
    int level = 0;
    std::string type, size;
    if (!(lf >> level) || !(tf >> type) || !(sf >> size)) continue;
    const int64_t bytes = parse_cache_size(size);
    if (bytes <= 0 || type == "Instruction") continue;
    if (level == 1) c.l1d = bytes;
    else if (level == 2) c.l2 = bytes;
    else if (level == 3) c.l3 = bytes;
    else continue;
    any = true;
  }
  if (any) c.source = "sysfs";
  return any;
}

#if defined(__x86_64__)
// cpuid's deterministic cache parameters: leaf 4 on Intel, 0x8000001D on AMD (same layout; leaf 4
// reads as zeros on AMD). Size = ways x partitions x line x sets.
bool caches_from_cpuid(CacheSizes& c) {
  for (unsigned leaf : {4u, 0x8000001Du}) {
    if (static_cast<unsigned>(__get_cpuid_max(leaf & 0x80000000u, nullptr)) < leaf) continue;
    bool any = false;
    for (unsigned sub = 0; sub < 8; ++sub) {
      unsigned a = 0, b = 0, cc = 0, d = 0;
      __cpuid_count(leaf, sub, a, b, cc, d);
      const unsigned type = a & 0x1f, level = (a >> 5) & 0x7;
      if (type == 0) break;
      if (type == 2) continue;  // instruction cache
      const int64_t bytes = int64_t{(b >> 22) + 1} * (((b >> 12) & 0x3ff) + 1) * ((b & 0xfff) + 1) * (int64_t{cc} + 1);
      if (level == 1) c.l1d = bytes;
      else if (level == 2) c.l2 = bytes;
      else if (level == 3) c.l3 = bytes;
      any = true;
    }
    if (any) {
      c.source = "cpuid";
      return true;
    }
  }
  // AMD's older size leaves, which hypervisors pass even where they hide the topology extensions
  // (and so 0x8000001D, and sysfs's cache directories): an AMD Zen 5 VM here read as the 32 KB /
  // 512 KB defaults instead of its 48 KB / 1 MB. 0x80000005 ECX[31:24]: L1d KB; 0x80000006
  // ECX[31:16]: L2 KB, EDX[31:18]: L3 in 512 KB units.
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) >= 0x80000006u) {
    unsigned a = 0, b = 0, cc = 0, d = 0;
    __cpuid(0x80000005u, a, b, cc, d);
    const int64_t l1 = int64_t{cc >> 24} << 10;
    __cpuid(0x80000006u, a, b, cc, d);
    const int64_t l2 = int64_t{cc >> 16} << 10, l3 = int64_t{d >> 18} << 19;
    if (l1 > 0 && l2 > 0) {
      c.l1d = l1, c.l2 = l2;
      if (l3 > 0) c.l3 = l3;
      c.source = "cpuid (0x80000005/6)";
      return true;
    }
  }
  return false;
}
#endif

CacheSizes detect_caches() {
  CacheSizes c;
  if (caches_from_sysfs(c)) return c;
#if defined(__x86_64__)
  c = CacheSizes{};
  if (caches_from_cpuid(c)) return c;
#endif
  return CacheSizes{};
}

std::string human(int64_t bytes) {
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MB";
  if (bytes >= (1 << 20)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f MB", static_cast<double>(bytes) / (1 << 20));
    return buf;
  }
  return std::to_string(bytes >> 10) + " KB";
}

}  // namespace

int64_t parse_cache_size(const std::string& text) {
  if (text.empty() || text.size() > 24) return -1;
  size_t pos = 0;
  int64_t v = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    v = v * 10 + (text[pos++] - '0');
    if (v > (int64_t{1} << 40)) return -1;
  }
  if (pos == 0) return -1;
  int64_t mul = 1;
  if (pos < text.size()) {
    const char u = text[pos++];
    if (u == 'K' || u == 'k') mul = int64_t{1} << 10;
    else if (u == 'M' || u == 'm') mul = int64_t{1} << 20;
    else if (u == 'G' || u == 'g') mul = int64_t{1} << 30;
    else return -1;
    if (pos < text.size() && (text[pos] == 'B' || text[pos] == 'b')) ++pos;
  }
  if (pos != text.size()) return -1;
  return v * mul;
}

CacheSizes parse_cache_sizes(const std::string& spec, CacheSizes base) {
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ',');) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const int64_t bytes = eq == std::string::npos ? -1 : parse_cache_size(item.substr(eq + 1));
    if (bytes < 0) throw Error("cache sizes '" + spec + "': '" + item + "' is not NAME=SIZE (l1d=48K, l2=1M, l3=32M)");
    if (bytes < (4 << 10) || bytes > (int64_t{4} << 30))
      throw Error("cache sizes '" + spec + "': " + key + " must be between 4K and 4G");
    if (key == "l1d") base.l1d = bytes;
    else if (key == "l2") base.l2 = bytes;
    else if (key == "l3") base.l3 = bytes;
    else throw Error("cache sizes '" + spec + "': unknown cache '" + key + "' (l1d, l2, l3)");
  }
  base.source = "LOWBIT_CACHES";
  return base;
}

std::string CacheSizes::to_string() const {
  return "L1d " + human(l1d) + ", L2 " + human(l2) + (l3 ? ", L3 " + human(l3) : "") + " (" + source + ")";
}

CacheSizes host_caches() {
  static const CacheSizes detected = detect_caches();
  const std::string override = settings().cache_override;  // LOWBIT_CACHES or set_cache_override
  return override.empty() ? detected : parse_cache_sizes(override, detected);
}

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
  Target t = apply_isa_cap(detected, settings().isa_cap.c_str());  // LOWBIT_ISA or set_isa_cap
  t.caches = host_caches();
  return t;
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
  t.caches = host_caches();
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
