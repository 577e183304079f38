#include "lowbit/io/samples.h"

#include <algorithm>
#include <filesystem>

#include "lowbit/common/error.h"
#include "lowbit/io/npy.h"

namespace lowbit {

Tensor load_input(const std::string& path, const Graph& g, size_t index, const ImagePreprocess& pre) {
  if (is_image_file(path)) return load_image_tensor(path, g.value(g.inputs.at(index)).shape, pre);
  return load_npy(path);
}

std::vector<std::vector<Tensor>> load_samples(const std::string& dir, const Graph& g, int limit,
                                              const ImagePreprocess& pre) {
  if (g.inputs.size() != 1) throw Error("calibration data from a folder needs a model with one input");
  std::vector<std::string> files;
  if (!std::filesystem::is_directory(dir)) throw Error("calibration data '" + dir + "' is not a folder");
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".npy" || is_image_file(e.path().string())) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw Error("calibration data '" + dir + "' holds no .npy, .png, .jpg or .jpeg files");
  std::vector<std::vector<Tensor>> samples;
  for (auto& f : files) {
    if (static_cast<int>(samples.size()) >= limit) break;
    Tensor t = load_input(f, g, 0, pre);
    const Value& in = g.value(g.inputs[0]);
    if (t.shape() != in.shape)
      throw Error("calibration sample '" + f + "' is " + shape_str(t.shape()) + ", the model takes " +
                  shape_str(in.shape));
    samples.push_back({t});
  }
  return samples;
}

}  // namespace lowbit
