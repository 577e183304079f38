#pragma once
// Built-in models: torchvision's ResNet-18/50 and MobileNetV2 rebuilt in code with deterministic
// random weights, so that benchmarks and demos need no model files. The graphs are what an ONNX
// export of the torchvision model looks like (BatchNormalization unfused, ReLU6 as Clip), i.e. the
// input of lowbit's passes; constants carry torchvision's state_dict names.
#include <cstdint>
#include <string>
#include <vector>

#include "lowbit/ir/graph.h"

namespace lowbit {

// "resnet18", "resnet50", "mobilenet_v2".
std::vector<std::string> zoo_model_names();
bool is_zoo_model(const std::string& name);

// One input "input" (f32 1x3x224x224), one output "logits" (f32 1x1000). The same seed gives the
// same weights on every platform. Throws lowbit::Error for an unknown name.
Graph build_zoo_model(const std::string& name, uint64_t seed = 1);

}  // namespace lowbit
