#pragma once
// One exception type for every user-facing failure. Messages name the node, the op and the
// reason so that a user can act on them without a debugger.
#include <stdexcept>
#include <string>

namespace lowbit {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace lowbit
