#include "lowbit/io/image.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "lowbit/common/error.h"

// The decoder's allocations, bounded by what the header declares. A PNG that declares 1 x 1 can
// still inflate gigabytes of zlib data (stb_image grows its output buffer by doubling, without
// limit); no buffer of a W x H image needs more than 8 bytes a pixel (16-bit RGBA), a filter byte a
// row and stb's own structures (under 1 MiB). load_image sets the bound for the image it decodes.
namespace lowbit::image_detail {
inline thread_local size_t decoder_limit = size_t{1} << 20;
// Zeroed: stb_image 2.27 mallocs its JPEG decoder state and decodes a scan with whatever Huffman
// tables it holds, defined by the file or not. With recycled memory a scan that names a table the
// file never defined decoded with a previous image's leftovers, which failed stb's internal assert
// in debug builds and read past a table in release (tests/fuzz/findings/image/crash-99e5..., found
// by the test command's libFuzzer minute). Zeroed, an undefined table decodes every code as symbol
// 0 of length 0: deterministic, in bounds, and stb then refuses the file.
inline void* bounded_malloc(size_t n) { return n > decoder_limit ? nullptr : std::calloc(1, n); }
inline void* bounded_realloc(void* p, size_t n) { return n > decoder_limit ? nullptr : std::realloc(p, n); }
}  // namespace lowbit::image_detail
#define STBI_MALLOC(n) lowbit::image_detail::bounded_malloc(n)
#define STBI_REALLOC(p, n) lowbit::image_detail::bounded_realloc(p, n)
#define STBI_FREE(p) std::free(p)

// stb_image's implementation lives in this file only. STB_IMAGE_STATIC keeps its symbols internal so
// that a program which also links Debian's libstb cannot clash with it. It compiles warning-clean under
// the project's flags with GCC 12; the pragma covers other compilers' stricter defaults.
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_FAILURE_USERMSG
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

namespace lowbit {
namespace {

// One axis of a bilinear resize with half-pixel centres (OpenCV INTER_LINEAR, PIL without
// antialiasing): output i samples source coordinate (i + 0.5) * src / dst - 0.5, clamped to the edge.
struct Tap {
  int lo, hi;
  float w;  // weight of hi
};

std::vector<Tap> taps(int src, int dst) {
  std::vector<Tap> t(static_cast<size_t>(dst));
  float scale = static_cast<float>(src) / static_cast<float>(dst);
  for (int i = 0; i < dst; ++i) {
    float s = std::clamp((static_cast<float>(i) + 0.5f) * scale - 0.5f, 0.0f, static_cast<float>(src - 1));
    int lo = static_cast<int>(s);
    int hi = std::min(lo + 1, src - 1);
    t[static_cast<size_t>(i)] = {lo, hi, s - static_cast<float>(lo)};
  }
  return t;
}

// stb_image 2.27 (Debian 12's) builds a JPEG Huffman table from a DHT segment without checking that
// its 16 code counts sum to at most 256 (2.28 added the check): a hostile file declaring more writes
// past the table's 257-entry size array (found by scripts/fuzz.sh, tests/fuzz/findings/image/).
// The segments are walked here first as stb reads them (junk between segments skipped, tables read
// on past a segment that is too short for them, scans skipped: progressive files define tables
// between them); anything else is left to stb, which refuses it.
std::string jpeg_bad_huffman_table(const uint8_t* p, size_t n) {
  // Start of image: 0xFF, any number of 0xFF fill bytes, 0xD8 (stb accepts the fill too).
  size_t i = 0;
  while (i < n && p[i] == 0xFF) ++i;
  if (i == 0 || i >= n || p[i] != 0xD8) return "";  // not a JPEG
  ++i;
  while (i + 4 <= n) {
    if (p[i] != 0xFF) {  // stb skips bytes between segments until the next 0xFF: so does this walk
      ++i;
      continue;
    }
    const uint8_t m = p[i + 1];
    if (m == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {  // markers without a length
      i += 2;
      continue;
    }
    if (m == 0xD9) return "";  // end of image
    const size_t len = (size_t{p[i + 2]} << 8) | p[i + 3];
    if (m == 0xC4) {  // before the length check: stb reads a DHT whose length runs past the file too
      // As stb reads it: tables while the segment's declared length lasts, each 17 bytes and its
      // codes, read on past the segment's end when the length is too short for them (0 past EOF).
      int64_t left = static_cast<int64_t>(len) - 2;
      size_t j = i + 4;
      while (left > 0) {
        int codes = 0;
        for (size_t k = 1; k <= 16; ++k) codes += j + k < n ? p[j + k] : 0;
        if (codes > 256)
          return "a Huffman table (DHT segment at byte " + std::to_string(i) + ") declares " + std::to_string(codes) +
                 " codes, more than the 256 a JPEG table can hold";
        j += 17 + static_cast<size_t>(codes);
        left -= 17 + codes;
      }
    }
    if (len < 2 || i + 2 + len > n) return "";
    i += 2 + len;
    if (m == 0xDA) {  // start of scan: skip the entropy-coded data to the next marker, as stb reads it:
      // 0xFF, any number of 0xFF fill bytes, then 0x00 (a stuffed data byte) or a restart marker is
      // data; anything else ends the scan. (Stopping at "FF FF" instead missed a table after
      // "FF FF .. FF 00" in a scan: tests/fuzz/findings/image/.)
      while (i < n) {
        if (p[i] != 0xFF) {
          ++i;
          continue;
        }
        size_t k = i + 1;
        while (k < n && p[k] == 0xFF) ++k;
        if (k < n && (p[k] == 0x00 || (p[k] >= 0xD0 && p[k] <= 0xD7))) {
          i = k + 1;
          continue;
        }
        i = k - 1;  // at the 0xFF before the marker
        break;
      }
    }
  }
  return "";
}

}  // namespace

bool is_image_file(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

Image load_image(const std::string& path, int64_t max_pixels) {
  max_pixels = std::min(max_pixels, kMaxImagePixels);
  // Read once (the header check and the decode see the same bytes), at most 1 GiB.
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error("cannot load image '" + path + "': " + ec.message());
  if (size > (uintmax_t{1} << 30)) throw Error("image '" + path + "' is " + std::to_string(size) + " bytes, over 1 GiB");
  std::string bytes(static_cast<size_t>(size), '\0');
  std::ifstream f(path, std::ios::binary);
  if (!f.read(bytes.data(), static_cast<std::streamsize>(size)))
    throw Error("cannot load image '" + path + "': read failed");
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int len = static_cast<int>(bytes.size());
  if (const std::string bad = jpeg_bad_huffman_table(data, bytes.size()); !bad.empty())
    throw Error("cannot load image '" + path + "': corrupt JPEG: " + bad);
  int w = 0, h = 0, channels = 0;
  image_detail::decoder_limit = size_t{1} << 20;
  // The header first: a JPEG declaring 20000 x 20000 made stb_image allocate 1.2 GB of component
  // planes before reading a byte of its data.
  if (!stbi_info_from_memory(data, len, &w, &h, &channels))
    throw Error("cannot load image '" + path + "': " + stbi_failure_reason());
  if (static_cast<int64_t>(w) * h > max_pixels)
    throw Error("image '" + path + "' declares " + std::to_string(w) + "x" + std::to_string(h) + " pixels, more than the " +
                std::to_string(max_pixels) + (max_pixels == kMaxImagePixels ? " (8192 x 8192) lowbit decodes" : " allowed"));
  image_detail::decoder_limit = size_t{8} * size_t(w) * size_t(h) + size_t(h) + (size_t{1} << 20);
  stbi_uc* px = stbi_load_from_memory(data, len, &w, &h, &channels, 3);
  if (!px) throw Error("cannot load image '" + path + "': " + stbi_failure_reason());
  Image img;
  img.width = w;
  img.height = h;
  img.rgb.assign(px, px + static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
  stbi_image_free(px);
  return img;
}

Tensor image_to_tensor(const Image& img, const Shape& shape, const ImagePreprocess& pre) {
  if (shape.size() != 4 || shape[0] != 1 || (shape[1] != 3 && shape[1] != 1) || shape[2] <= 0 || shape[3] <= 0)
    throw Error("an image input needs a model input of shape 1x3xHxW or 1x1xHxW (NCHW), got " + shape_str(shape) +
                " (fix dynamic dims with --input-shape)");
  if (img.width <= 0 || img.height <= 0) throw Error("empty image");
  for (float s : pre.std)
    if (!(s > 0) || !std::isfinite(s)) throw Error("image normalisation: every std must be positive");
  const int C = static_cast<int>(shape[1]), H = static_cast<int>(shape[2]), W = static_cast<int>(shape[3]);
  int rw = W;  // width of the resized image; the rest of the row is padding
  if (pre.resize == ResizeMode::pad) {
    double want = std::ceil(static_cast<double>(H) * img.width / img.height);
    rw = static_cast<int>(std::clamp(want, 1.0, static_cast<double>(W)));
  }
  std::vector<Tap> ty = taps(img.height, H), tx = taps(img.width, rw);
  Tensor t(DType::f32, shape);  // zero-filled: the padding
  float* out = t.data<float>();
  const size_t plane = static_cast<size_t>(H) * static_cast<size_t>(W);
  const uint8_t* src = img.rgb.data();
  auto at = [&](int y, int x, int c) {
    return static_cast<float>(src[(static_cast<size_t>(y) * static_cast<size_t>(img.width) + static_cast<size_t>(x)) * 3 +
                                  static_cast<size_t>(c)]);
  };
  for (int y = 0; y < H; ++y) {
    const Tap& a = ty[static_cast<size_t>(y)];
    for (int x = 0; x < rw; ++x) {
      const Tap& b = tx[static_cast<size_t>(x)];
      float rgb[3];
      for (int c = 0; c < 3; ++c) {
        float top = at(a.lo, b.lo, c) + b.w * (at(a.lo, b.hi, c) - at(a.lo, b.lo, c));
        float bot = at(a.hi, b.lo, c) + b.w * (at(a.hi, b.hi, c) - at(a.hi, b.lo, c));
        rgb[c] = (top + a.w * (bot - top)) / 255.0f;
      }
      size_t o = static_cast<size_t>(y) * static_cast<size_t>(W) + static_cast<size_t>(x);
      if (C == 1) {
        float luma = 0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2];  // ITU-R BT.601, as PIL's "L"
        out[o] = (luma - pre.mean[0]) / pre.std[0];
      } else {
        for (int c = 0; c < 3; ++c) out[static_cast<size_t>(c) * plane + o] = (rgb[c] - pre.mean[c]) / pre.std[c];
      }
    }
  }
  return t;
}

Tensor load_image_tensor(const std::string& path, const Shape& shape, const ImagePreprocess& pre) {
  Image img = load_image(path);
  try {
    return image_to_tensor(img, shape, pre);
  } catch (const Error& e) {
    throw Error("'" + path + "': " + e.what());
  }
}

ResizeMode parse_resize_mode(const std::string& s) {
  if (s == "stretch") return ResizeMode::stretch;
  if (s == "pad") return ResizeMode::pad;
  throw Error("unknown resize mode '" + s + "' (stretch or pad)");
}

}  // namespace lowbit
