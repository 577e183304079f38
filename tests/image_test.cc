// Image inputs (io/image.h) against hostile files: a header declaring more pixels than lowbit
// decodes is refused before the decoder allocates for it; truncated and garbage files are errors
// naming the file. Files are written byte by byte here (PNG / JPEG headers per their specs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
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

// A 1 x 1 grey PNG whose one IDAT inflates to `inflated` zero bytes: a zlib stream with one fixed-
// Huffman deflate block, a literal 0 then <length 258, distance 1> copies (13 bits each, 159:1).
std::string png_bomb(size_t inflated) {
  std::string z = "\x78\x01";  // zlib header: deflate, 32 KB window, no dictionary
  uint64_t acc = 0;
  int nbits = 0;
  auto put = [&](uint32_t v, int n) {  // LSB first, as deflate packs header and extra bits
    acc |= uint64_t(v) << nbits;
    nbits += n;
    while (nbits >= 8) z += char(acc & 0xff), acc >>= 8, nbits -= 8;
  };
  auto huff = [&](uint32_t code, int n) {  // Huffman codes go most significant bit first
    for (int i = n - 1; i >= 0; --i) put((code >> i) & 1, 1);
  };
  put(1, 1);                 // BFINAL
  put(1, 2);                 // BTYPE 01: fixed Huffman codes
  huff(0x30, 8);             // literal 0
  for (size_t done = 1; done + 258 <= inflated; done += 258) {
    huff(0xC0 + (285 - 280), 8);  // length 258
    huff(0, 5);                   // distance 1
  }
  huff(0, 7);  // end of block (256)
  put(0, 7);   // flush
  std::string s = png_header(1, 1);
  s[24 + 1] = 0;  // colour type 0: grey (byte 25 is the IHDR's colour type)
  s += be32(uint32_t(z.size())) + "IDAT" + z + be32(0);
  s += be32(0) + "IEND" + be32(0);
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

TEST(Image, ACallerCapsThePixelsBelowTheLibrarys) {
  const std::string seed = LOWBIT_SOURCE_DIR "/tests/fuzz/corpus/image/rgb_16x12.jpg";
  EXPECT_EQ(load_image(seed, 16 * 12).width, 16);
  try {
    load_image(seed, 16 * 12 - 1);
    ADD_FAILURE() << "decoded over the cap";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("declares 16x12 pixels, more than the 191 allowed"));
  }
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

// 600 MB of zlib output from a 4 MB file declaring one pixel: the decoder may not allocate more
// than the header's pixels justify (8 bytes a pixel, a byte a row, 1 MiB), so it stops at 1 MiB and
// this process's peak memory grows by the file, not by the bomb (ctest runs each test alone).
TEST(Image, ZlibBombIsStoppedAtTheDeclaredSize) {
  const std::string bomb = write_tmp("bomb.png", png_bomb(size_t{600} << 20));
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  EXPECT_THAT(error_of(bomb), HasSubstr("cannot load image '" + bomb + "'"));
  ::getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 100 * 1024) << "KiB of peak memory for a one-pixel image";
  std::filesystem::remove(bomb);
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

// Found by scripts/fuzz.sh: a JPEG whose Huffman table declares more than 256 codes made Debian's
// stb_image 2.27 write past the table (UBSan: index 257 out of bounds). Refused before stb runs.
TEST(Image, AJpegHuffmanTableWithTooManyCodesIsRefusedBeforeDecoding) {
  // b9e8..: a baseline file's table; 2c69..: a progressive file's table after a scan whose data
  // holds "FF FF .. FF 00" (fill bytes, then a stuffed zero: data, not a marker, to stb).
  for (const char* name : {"crash-b9e84e5ecc13f934", "crash-2c69ff787f4d6c94"}) {
    const std::string finding = std::string(LOWBIT_SOURCE_DIR "/tests/fuzz/findings/image/") + name;
    try {
      load_image(finding);
      ADD_FAILURE() << name << ": the corrupt JPEG was decoded";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("corrupt JPEG: a Huffman table")) << name;
      EXPECT_THAT(e.what(), ::testing::HasSubstr("more than the 256")) << name;
    }
  }
}

TEST(Image, AScanWithAnUndefinedHuffmanTableIsRefusedTheSameWayEveryTime) {
  // 99e5..: a scan names an AC table the file never defines. stb used whatever its freshly malloc'd
  // decoder state held; with that state zeroed the file is refused alike after any other decode.
  const std::string finding = LOWBIT_SOURCE_DIR "/tests/fuzz/findings/image/crash-99e594791f3509b6";
  std::string first;
  for (const char* before : {"", "rgb_16x12.jpg", "progressive_16x12.jpg"}) {
    if (*before) load_image(std::string(LOWBIT_SOURCE_DIR "/tests/fuzz/corpus/image/") + before);
    try {
      load_image(finding);
      ADD_FAILURE() << "decoded after '" << before << "'";
    } catch (const Error& e) {
      if (first.empty()) first = e.what();
      EXPECT_EQ(e.what(), first) << "after '" << before << "'";
    }
  }
}

}  // namespace
}  // namespace lowbit
