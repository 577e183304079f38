#pragma once
// Seeded synthetic inputs (bench, run without --input, calibration without data). splitmix64 +
// Box-Muller: portable across standard libraries, unlike <random>'s distributions.
#include <cstdint>
#include <vector>

#include "lowbit/ir/graph.h"

namespace lowbit {

// One tensor per graph input: f32 ~ N(0, 1) (what normalised images look like), integers small.
std::vector<Tensor> synthetic_inputs(const Graph& g, uint64_t seed);

// The held-back inputs accuracy is measured on when the user gives none (compare, sensitivity,
// --precision auto): n samples from seeds 50000 + i, apart from calibration's (1000 + i).
std::vector<std::vector<Tensor>> held_out_inputs(const Graph& g, int n);

}  // namespace lowbit
