// Image inputs (io/image.h) against hostile files: a header declaring more pixels than lowbit
// decodes is refused before the decoder allocates for it; truncated and garbage files are errors
// naming the file. Files are written byte by byte here (PNG / JPEG headers per their specs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "lowbit/common/error.h"
#include "lowbit/io/image.h"

namespace lowbit {
namespace {

using ::testing::HasSubstr;

std::string write_tmp(const std::string& name, const std::string& bytes) {
  const std::string p =
      (std::filesystem::temp_directory_path() / ("lowbit_image_test_" + std::to_string(::getpid()) + name)).string();
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

std::string be16(int v) { return {char((v >> 8) & 0xff), char(v & 0xff)}; }
std::string be32(uint32_t v) { return be16(int(v >> 16)) + be16(int(v & 0xffff)); }

// A baseline JPEG's start: SOI and a SOF0 frame header for W x H, 3 components (no data follows).
std::string jpeg_header(int w, int h) {
  std::string s = "\xFF\xD8";
  s += "\xFF\xC0" + be16(17) + std::string(1, 8) + be16(h) + be16(w) + std::string(1, 3);
  for (int c = 1; c <= 3; ++c) s += std::string{char(c), char(0x11), char(0)};
  return s;
}

// A PNG's signature and IHDR chunk for W x H, 8-bit RGB (the CRC is not checked by the decoder).
std::string png_header(uint32_t w, uint32_t h) {
  std::string s = "\x89PNG\r\n\x1a\n";
  s += be32(13) + "IHDR" + be32(w) + be32(h) + std::string{8, 2, 0, 0, 0} + be32(0);
  return s;
}

std::string error_of(const std::string& path) {
  try {
    load_image(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Image, HeadersDeclaringTooManyPixelsAreRefusedBeforeDecoding) {
  // 20000 x 20000 JPEG: stb_image would allocate 1.2 GB of component planes before the data.
  const std::string jpg = write_tmp("big.jpg", jpeg_header(20000, 20000));
  EXPECT_THAT(error_of(jpg), HasSubstr("declares 20000x20000 pixels"));
  EXPECT_THAT(error_of(jpg), HasSubstr(jpg));
  const std::string png = write_tmp("big.png", png_header(9000, 9000));
  EXPECT_THAT(error_of(png), HasSubstr("declares 9000x9000 pixels"));
  // Within the cap but without data: the decoder's own error, still naming the file.
  const std::string small = write_tmp("small.jpg", jpeg_header(64, 48));
  EXPECT_THAT(error_of(small), HasSubstr("cannot load image '" + small + "'"));
  for (const std::string& p : {jpg, png, small}) std::filesystem::remove(p);
}

TEST(Image, GarbageAndEmptyFilesAreErrors) {
  const std::string empty = write_tmp("empty.png", "");
  const std::string garbage = write_tmp("garbage.jpg", std::string(100, '\x5a'));
  const std::string cut = write_tmp("cut.png", png_header(4, 4).substr(0, 20));
  for (const std::string& p : {empty, garbage, cut}) {
    EXPECT_THAT(error_of(p), HasSubstr("cannot load image '" + p + "'"));
    std::filesystem::remove(p);
  }
  EXPECT_THAT(error_of("/nonexistent/x.png"), HasSubstr("cannot load image"));
}

}  // namespace
}  // namespace lowbit
