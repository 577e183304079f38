#pragma once
// Pieces of ONNX writing shared by the fp32 exporter (onnx_export.cc) and the QDQ exporter.
#include <onnx/onnx_pb.h>

#include <string>

#include "lowbit/ir/graph.h"

namespace lowbit {

// ONNX TensorProto element type of a dtype; throws naming `what` when ONNX has none (sub-byte).
int onnx_elem_type(DType t, const std::string& what);
// Tensor `t` as an initializer or attribute payload (raw little-endian data).
void fill_onnx_tensor(onnx::TensorProto* out, const Tensor& t, const std::string& name, const std::string& what);
// Name, element type and (when known) shape of a value.
void fill_onnx_value_info(onnx::ValueInfoProto* vi, const Value& v);
// Writes attribute `name` of node `n` (every Attributes kind; tensors as TensorProto).
void fill_onnx_attribute(onnx::AttributeProto* a, const std::string& name, const AttrValue& v, const Node& n);
// False for attributes that opset 13 does not have, at values that mean what opset 13 does
// without them (BatchNormalization's training_mode = 0 and Reshape's allowzero = 0, both opset 14;
// Softmax's coerce_2d, lowbit's note of the opset < 13 form, which the exporters refuse when set):
// both exporters leave them out. Set to anything else they stay, and ONNX Runtime says why.
bool opset13_attribute(const Node& n, const std::string& name);

}  // namespace lowbit
