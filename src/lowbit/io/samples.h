#pragma once
// Model inputs from files: an .npy as stored, or a PNG / JPEG preprocessed to the input's shape.
#include <string>
#include <vector>

#include "lowbit/io/image.h"
#include "lowbit/ir/graph.h"

namespace lowbit {

// Model input `index` of `g` from `path`.
Tensor load_input(const std::string& path, const Graph& g, size_t index, const ImagePreprocess& pre);
// Up to `limit` samples from a folder of .npy files and/or images, sorted by name (one file per
// sample; models with one input). Each must have the input's shape (clear error naming the file).
std::vector<std::vector<Tensor>> load_samples(const std::string& dir, const Graph& g, int limit,
                                              const ImagePreprocess& pre = {});

}  // namespace lowbit
