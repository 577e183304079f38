#pragma once
// Transpose and Slice (constant starts / ends / axes / steps) as copies of contiguous runs: the
// output, walked in row-major order, is a set of runs whose source is contiguous too (a channel
// shuffle's Transpose moves whole H x W planes; a channel Slice of NCHW whole C' x H x W blocks).
// The plan is made once per node: output dims with their source strides, trailing dims merged
// into one run while the source stays contiguous. Any element size (f32, u8 codes); portable C++,
// exact (copies), so identical to the reference.
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

std::string check_transpose_runs(const NodeContext& ctx);
std::unique_ptr<Kernel> create_transpose_runs(const NodeContext& ctx);
std::string check_slice_runs(const NodeContext& ctx);
std::unique_ptr<Kernel> create_slice_runs(const NodeContext& ctx);

}  // namespace lowbit
