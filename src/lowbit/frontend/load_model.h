#pragma once
#include <map>
#include <string>

#include "lowbit/ir/graph.h"

namespace lowbit {

// MODEL as the command line takes it: a path to an .onnx file or a zoo name (resnet50, ...).
Graph load_model(const std::string& spec, const std::map<std::string, Shape>& input_shapes = {});
// An ONNX model given as bytes (no folder: its tensors must be inline); `origin` names it in errors.
Graph load_model_bytes(const std::string& bytes, const std::map<std::string, Shape>& input_shapes = {},
                       const std::string& origin = "<bytes>");

// "input=1x3x224x224" -> {"input", {1,3,224,224}}; throws lowbit::Error on bad syntax.
std::pair<std::string, Shape> parse_input_shape(const std::string& text);

}  // namespace lowbit
