#pragma once
// ONNX -> lowbit IR. Imports opsets 9..17 of the default domain and rewrites older op versions
// into the canonical (opset-17) forms so that schemas and kernels see one form per op. The
// importer only translates: validation and passes are the caller's job (CompiledModel::compile).
#include <cstdint>
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

// How big a graph the importer takes, checked right after parsing, before anything is built from
// it (a hostile file should cost its parse and no more). The defaults are far above real models:
// torchvision's CNNs have under 1,000 nodes and 500 initializers, exported transformers ~10^5
// nodes; ranks above 8 do not occur in CNNs. Nesting: subgraphs (If, Loop, Scan) are refused,
// and protobuf's parser stops at 100 levels of nested messages.
struct OnnxLimits {
  int64_t max_file_bytes = int64_t{2} << 30;  // protobuf's own limit; bigger models keep weights outside
  int64_t max_nodes = int64_t{1} << 20;
  int64_t max_initializers = int64_t{1} << 20;
  int64_t max_graph_io = int64_t{1} << 16;     // graph inputs, outputs, value_info entries (each)
  int64_t max_node_io = int64_t{1} << 16;      // inputs or outputs of one node
  int64_t max_rank = 16;                       // dims of any declared tensor or initializer
  int64_t max_attribute_values = int64_t{1} << 24;  // ints / floats / strings of one attribute
};

// `input_shapes` fixes the shapes of graph inputs by name (the CLI's --input-shape); it must name
// real inputs and match their rank. Throws lowbit::Error naming the file/node and the reason.
// A model file's external data is read from its folder (ExternalDataDir in onnx_tensor.h); a model
// given as bytes must keep its tensors inline.
Graph import_onnx_file(const std::string& path, const std::map<std::string, Shape>& input_shapes = {},
                       const OnnxLimits& limits = {});
Graph import_onnx_bytes(const std::string& bytes, const std::map<std::string, Shape>& input_shapes = {},
                        const std::string& origin = "<memory>", const OnnxLimits& limits = {});

}  // namespace lowbit
