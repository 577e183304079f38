#pragma once
// Concat placed in place by the memory plan (passes/concat_in_place.cc): its inputs' producers
// wrote them straight into their slices of its output, so the kernel has nothing to do. Concats the
// plan could not place copy (the reference's one memcpy per input and outer index).
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

std::string check_concat_in_place(const NodeContext& ctx);
std::unique_ptr<Kernel> create_concat_in_place(const NodeContext& ctx);

}  // namespace lowbit
