#pragma once
// lowbit quantized graph -> ONNX in QDQ form (opset 13): each QConv / QGemm / QAdd becomes
// DequantizeLinear on its inputs (weights i8 per output channel, bias i32 in units of
// s_x * s_w[m]), the float op, its fused Add / Relu / Clip, and QuantizeLinear on the output;
// u8 MaxPool / Flatten / Reshape stay on u8 and u8 GlobalAveragePool sits between DQ and Q. This
// is the form ONNX Runtime's QDQ transformers fuse back into its int8 kernels.
//
// Where lowbit fuses more than QDQ can state exactly it adds a quantization step: a QConv with a
// residual input quantizes the convolution (before the Add) to u8 over the range that the
// output's and the residual's ranges make reachable, so nothing that the output keeps is clipped.
#include <string>

#include "lowbit/ir/graph.h"

namespace lowbit {

// `g` is a quantized graph as quantize_graph / build_quantized / an .lbm artifact holds it
// (before compile's passes; fp32 nodes with fused epilogues are expanded too). Throws
// lowbit::Error naming the node that has no QDQ form.
//
// Sub-byte codes, by default, in the form ONNX Runtime 1.30 runs: 4- and 2-bit weights as INT4
// (opset 21), 4- and 2-bit activations as QuantizeLinear to UINT8 then Clip to their code range.
// exact_subbyte_types: each code in its own ONNX type instead (opset 25, IR 13): INT2 weights,
// and activations quantized to UINT4 / UINT2 and dequantized from them; lowbit imports either.
struct QdqExportOptions {
  bool exact_subbyte_types = false;
};
std::string export_onnx_qdq_bytes(const Graph& g, const QdqExportOptions& o = {});
void export_onnx_qdq(const Graph& g, const std::string& path, const QdqExportOptions& o = {});

}  // namespace lowbit
