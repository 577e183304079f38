#pragma once
// MaxPool of packed signs (b1 activations, ir/codes.h): the max of +-1 values is -1 only where
// every tap is -1, so with bit 1 = -1 it is the AND of the taps' words (padded taps are skipped,
// as MaxPool pads with -inf), 64 channels per instruction and no unpacking. Exact, so identical to
// the reference whatever the thread count.
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

std::string check_maxpool2d_b1(const NodeContext& ctx);
std::unique_ptr<Kernel> create_maxpool2d_b1(const NodeContext& ctx);

}  // namespace lowbit
