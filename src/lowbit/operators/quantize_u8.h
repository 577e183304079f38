#pragma once
// QuantizeLinear (f32 -> u8) and DequantizeLinear (u8 -> f32) with one scale / zero point: the
// network's input and output conversions of an int8 model.
#include <memory>
#include <string>

#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"

namespace lowbit {

std::string check_quantize_u8(const NodeContext& ctx);
std::unique_ptr<Kernel> create_quantize_u8_avx2(const NodeContext& ctx);
std::string check_dequantize_u8(const NodeContext& ctx);
std::unique_ptr<Kernel> create_dequantize_u8_avx2(const NodeContext& ctx);
std::unique_ptr<Kernel> create_quantize_u8_neon(const NodeContext& ctx);
std::unique_ptr<Kernel> create_dequantize_u8_neon(const NodeContext& ctx);

}  // namespace lowbit
