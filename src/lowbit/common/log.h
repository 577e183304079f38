#pragma once
// Where lowbit's diagnostics go: warnings (a quantized op left slow, a degenerate layer), notes and
// the verbose traces (LOWBIT_VERBOSE=dispatch,qdq). A library runs inside someone else's process,
// so nothing writes to stderr directly: messages go to one sink, stderr by default, which an
// embedding program replaces (a logger, a Python callback, a test's capture). Thread-safe: the sink
// is called under a lock, one message at a time, from whichever thread logged.
#include <functional>
#include <string>

namespace lowbit {

enum class LogLevel { trace, note, warning };

// A message is one or more lines without the trailing newline; the default sink prints
// "lowbit: warning: ..." / "lowbit: note: ..." / "lowbit <trace>" lines to stderr.
using LogSink = std::function<void(LogLevel level, const std::string& message)>;

// Replaces the sink; an empty one restores stderr. Returns the previous sink (empty: stderr).
LogSink set_log_sink(LogSink sink);
void log_message(LogLevel level, const std::string& message);

inline void log_warning(const std::string& message) { log_message(LogLevel::warning, message); }
inline void log_note(const std::string& message) { log_message(LogLevel::note, message); }

}  // namespace lowbit
