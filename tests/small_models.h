#pragma once
// The small zoo models the API tests build: at 32 x 32 on one thread, calibrated on `samples`
// synthetic samples. ResNet-18 compiles and quantizes in about a second; MobileNetV2 (51 convs,
// depthwise ones among them, none wider than 960 inputs) is the cheap one for per-layer work
// that grows with the square of a layer's inputs (--rounding gptq).
#include "lowbit/api/build.h"

namespace lowbit::test {

inline BuildOptions small_zoo(const char* model, int samples = 2, int side = 32) {
  BuildOptions o;
  o.model = model;
  o.input_shapes = {{"input", {1, 3, side, side}}};
  o.compile.threads = 1;
  o.quantize.synthetic_samples = samples;
  return o;
}

inline BuildOptions small_resnet18(int samples = 2, int side = 32) { return small_zoo("resnet18", samples, side); }

}  // namespace lowbit::test
