#pragma once
// lowbit IR -> ONNX (opset 13, IR version 7). Meant for graphs as the frontends build them,
// before lowbit's passes: lowbit-internal forms (fused activations, Conv residual inputs,
// quantization parameters, sub-byte dtypes) have no ONNX equivalent and are rejected.
#include <string>

#include "lowbit/ir/graph.h"

namespace lowbit {

constexpr int kExportOnnxOpset = 13;
// Models with 4-bit weights: DequantizeLinear of INT4 needs opset 21 (IR 10); INT2 / UINT2 need
// opset 25 (IR 13).
constexpr int kExportOnnxOpsetInt4 = 21;
constexpr int kExportOnnxOpsetInt2 = 25;

// Serialises `g` as an ONNX ModelProto; throws lowbit::Error naming the offending node/value.
std::string export_onnx_bytes(const Graph& g);
void export_onnx(const Graph& g, const std::string& path);

}  // namespace lowbit
