#pragma once
// Resize by whole factors in nearest mode, the upsampling of FPN / UNet / DBNet necks (PyTorch
// exports `nearest` as asymmetric + floor): output pixel (y, x) is input pixel (y / fh, x / fw),
// so each input row is widened once and the widened row copied fh times. Portable C++; exact
// (copies), so identical to the reference.
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

std::string check_resize_f32_nearest_int(const NodeContext& ctx);
std::unique_ptr<Kernel> create_resize_f32_nearest_int(const NodeContext& ctx);

}  // namespace lowbit
