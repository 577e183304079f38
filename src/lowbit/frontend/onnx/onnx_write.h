#pragma once
// Pieces of ONNX writing shared by the fp32 exporter (onnx_export.cc) and the QDQ exporter.
#include <onnx/onnx_pb.h>

#include <string>

#include "lowbit/ir/graph.h"

namespace lowbit {

// Writes attribute `name` of node `n` (every Attributes kind; tensors as TensorProto).
void fill_onnx_attribute(onnx::AttributeProto* a, const std::string& name, const AttrValue& v, const Node& n);

}  // namespace lowbit
