#pragma once
// ONNX -> lowbit IR. Imports opsets 9..17 of the default domain and rewrites older op versions
// into the canonical (opset-17) forms so that schemas and kernels see one form per op. The
// importer only translates: validation and passes are the caller's job (CompiledModel::compile).
#include <map>
#include <string>

#include "lowbit/ir/graph.h"

namespace lowbit {

constexpr int kMinOnnxOpset = 9;
// 21: INT4 / UINT4 QDQ (sub-byte weights); 25: INT2 / UINT2. The ops whose form changed in 18-21
// are either read in both forms (Reduce* axes as attribute or input) or refused with a reason
// (blocked Q / DQ); 22-25 added element types (bfloat16, the float8 / float4 families, 2-bit
// integers) to ops whose semantics stay the same for the types lowbit reads, and attributes that
// are refused where set to anything but their default (QuantizeLinear's precision, opset 23).
constexpr int kMaxOnnxOpset = 25;

// `input_shapes` fixes the shapes of graph inputs by name (the CLI's --input-shape); it must name
// real inputs and match their rank. Throws lowbit::Error naming the file/node and the reason.
// A model file's external data is read from its folder (ExternalDataDir in onnx_tensor.h); a model
// given as bytes must keep its tensors inline.
Graph import_onnx_file(const std::string& path, const std::map<std::string, Shape>& input_shapes = {});
Graph import_onnx_bytes(const std::string& bytes, const std::map<std::string, Shape>& input_shapes = {},
                        const std::string& origin = "<memory>");

}  // namespace lowbit
