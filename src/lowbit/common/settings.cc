#include "lowbit/common/settings.h"

#include <cstdlib>
#include <mutex>
#include <sstream>

namespace lowbit {
namespace {

std::mutex& settings_mutex() {
  static std::mutex m;
  return m;
}

Settings& current() {
  static Settings s = [] {
    auto env = [](const char* name) {
      const char* v = std::getenv(name);
      return std::string(v ? v : "");
    };
    return Settings{env("LOWBIT_ISA"), env("LOWBIT_CACHES"), env("LOWBIT_VERBOSE")};
  }();
  return s;
}

}  // namespace

Settings settings() {
  std::lock_guard<std::mutex> lock(settings_mutex());
  return current();
}

void set_isa_cap(const std::string& cap) {
  std::lock_guard<std::mutex> lock(settings_mutex());
  current().isa_cap = cap;
}

void set_cache_override(const std::string& caches) {
  std::lock_guard<std::mutex> lock(settings_mutex());
  current().cache_override = caches;
}

void set_verbose(const std::string& topics) {
  std::lock_guard<std::mutex> lock(settings_mutex());
  current().verbose = topics;
}

bool verbose(const std::string& topic) {
  std::stringstream ss(settings().verbose);
  for (std::string t; std::getline(ss, t, ',');)
    if (t == topic || t == "all") return true;
  return false;
}

}  // namespace lowbit
