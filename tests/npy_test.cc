// .npy inputs are read from outside the program: a header whose shape overflows or promises more
// data than the file holds is refused with a clear error, never allocated or read past.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "lowbit/common/error.h"
#include "lowbit/io/npy.h"

namespace lowbit {
namespace {

// A version 1.0 .npy file with this header dict and `payload` bytes after it.
std::string write_npy(const std::string& name, const std::string& dict, size_t payload) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  const std::string path = ::testing::TempDir() + name;
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t hl = static_cast<uint16_t>(header.size());
  f.put(static_cast<char>(hl & 0xff));
  f.put(static_cast<char>(hl >> 8));
  f << header << std::string(payload, '\0');
  return path;
}

std::string error_loading(const std::string& path) {
  try {
    load_npy(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Npy, HostileShapesAreRefused) {
  using ::testing::HasSubstr;
  EXPECT_THAT(error_loading(write_npy("wrap.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", 64)),
              HasSubstr("more elements than a 64-bit count holds"));
  // 2^62 floats: the byte count 2^64 wraps to 0, which once passed the size check.
  EXPECT_THAT(error_loading(write_npy("huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2147483648, 2147483648), }", 64)),
              HasSubstr("data truncated"));
  EXPECT_THAT(error_loading(write_npy("digits.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, ), }", 64)),
              HasSubstr("too large"));
  EXPECT_THAT(error_loading(write_npy("short.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 23)),
              HasSubstr("data truncated (23 bytes for 6 values)"));
  const Tensor ok = load_npy(write_npy("ok.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24));
  EXPECT_EQ(ok.numel(), 6);
}

}  // namespace
}  // namespace lowbit
