#pragma once
// DepthToSpace as row interleaves: output row (h b + i) of channel c is the b input rows of block
// row i (their channels by mode) interleaved value by value. Any element size (f32, u8 codes);
// portable C++, exact (copies), so identical to the reference.
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

std::string check_depth_to_space(const NodeContext& ctx);
std::unique_ptr<Kernel> create_depth_to_space(const NodeContext& ctx);

}  // namespace lowbit
