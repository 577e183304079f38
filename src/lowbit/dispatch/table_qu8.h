#pragma once
// The quantized (u8 activations x i8 weights) rows of the dispatch table, best first per op. The
// main table (dispatch/table.cc) appends them; the reference candidates follow automatically.
#include <vector>

#include "lowbit/dispatch/registry.h"

namespace lowbit {

std::vector<KernelCandidate> qu8_candidates();

}  // namespace lowbit
