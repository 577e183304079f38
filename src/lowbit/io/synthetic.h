#pragma once
// Seeded synthetic inputs (bench, run without --input, calibration without data). splitmix64 +
// Box-Muller: portable across standard libraries, unlike <random>'s distributions.
#include <cstdint>
#include <vector>

#include "lowbit/ir/graph.h"

namespace lowbit {

// One tensor per graph input: f32 ~ N(0, 1) (what normalised images look like), integers small.
std::vector<Tensor> synthetic_inputs(const Graph& g, uint64_t seed);

}  // namespace lowbit
