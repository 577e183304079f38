#pragma once
// The tables of a per-channel map on u8 codes (QLut whose op is a channel_map: an inference
// BatchNormalization that BN folding left, with its fused clamp). They are derived, not stored:
// C x 256 bytes per node against C x 16 of BatchNormalization constants (DenseNet-121's 62 tables
// were 8.3 MB, as much as its int8 weights). ir/ is compiled without multiply-add contraction,
// so every architecture derives the same bytes from the same artifact.
#include <cstdint>
#include <string>
#include <vector>

#include "lowbit/ir/graph.h"

namespace lowbit {

// "" when node n (QLut, op attribute a channel_map) can have its tables derived; else why not.
std::string channel_table_unavailable(const Graph& g, const Node& n);

// Entry [c * 256 + q]: Y's code of the op on channel c at X's dequantized code q, clamped to Y's
// code range (NaN reads as 0, as in the element-wise tables). Throws naming the node when
// channel_table_unavailable says why.
std::vector<uint8_t> channel_table(const Graph& g, const Node& n);

}  // namespace lowbit
