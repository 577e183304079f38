#pragma once
// PNG/JPEG images as model inputs (calibration data, `run --input`): decode, resize to the input's
// HxW, convert to f32 NCHW and normalise per channel.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lowbit/ir/tensor.h"

namespace lowbit {

enum class ResizeMode {
  stretch,  // bilinear to exactly HxW (classification models)
  pad,      // keep the aspect ratio: height H, width min(W, ceil(H * w / h)), zeros to the right (PaddleOCR)
};

struct ImagePreprocess {
  // On the 0..1 scale: x = (pixel / 255 - mean[c]) / std[c]. Defaults are ImageNet's.
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
  ResizeMode resize = ResizeMode::stretch;
};

// Decoded 8-bit RGB, row-major HWC (grey images are expanded, alpha is dropped).
struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

// .png, .jpg, .jpeg (any case).
bool is_image_file(const std::string& path);
// Most pixels one image may declare: 2^26 (8192 x 8192, 192 MiB as RGB bytes), far past any CNN
// input; a header claiming more is refused before the decoder allocates for it.
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 26;
// Decodes a PNG or JPEG to 8-bit RGB; throws lowbit::Error naming the file (unreadable, corrupt,
// or declaring more than max_pixels, at most kMaxImagePixels: a program serving small inputs can
// refuse a 900-byte JPEG that declares 65535 x 1006 pixels before it costs 200 MB and seconds).
Image load_image(const std::string& path, int64_t max_pixels = kMaxImagePixels);
// `shape` is the model input's: [1, C, H, W] with C = 3 (RGB) or 1 (luma, normalised with mean[0]/std[0]).
// In pad mode the padding is 0 after normalisation, as PaddleOCR pads.
Tensor image_to_tensor(const Image& img, const Shape& shape, const ImagePreprocess& pre);
Tensor load_image_tensor(const std::string& path, const Shape& shape, const ImagePreprocess& pre);

ResizeMode parse_resize_mode(const std::string& s);  // "stretch" or "pad"

}  // namespace lowbit
