#include "lowbit/common/log.h"

#include <cstdio>
#include <mutex>

namespace lowbit {
namespace {

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}
LogSink& current_sink() {
  static LogSink s;
  return s;
}

void to_stderr(LogLevel level, const std::string& message) {
  const char* prefix = level == LogLevel::warning ? "lowbit: warning: " : level == LogLevel::note ? "lowbit: note: " : "";
  std::fprintf(stderr, "%s%s\n", prefix, message.c_str());
}

}  // namespace

LogSink set_log_sink(LogSink sink) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  LogSink old = std::move(current_sink());
  current_sink() = std::move(sink);
  return old;
}

void log_message(LogLevel level, const std::string& message) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  if (current_sink()) current_sink()(level, message);
  else to_stderr(level, message);
}

}  // namespace lowbit
