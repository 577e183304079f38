#pragma once
// NumPy .npy files (format 1.0/2.0, C order, little endian) for run's --input/--output.
#include <string>

#include "lowbit/ir/tensor.h"

namespace lowbit {

// f4, f8 (converted to f32), i8/i4/u1/i1/b1 dtypes. Throws lowbit::Error naming the file.
Tensor load_npy(const std::string& path);
void save_npy(const std::string& path, const Tensor& t);

}  // namespace lowbit
