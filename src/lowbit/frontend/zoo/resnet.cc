// torchvision.models.resnet18 / resnet50 (v1.5: a Bottleneck strides on its 3x3 conv).
#include "lowbit/common/error.h"
#include "lowbit/frontend/zoo/zoo_builder.h"

namespace lowbit::zoo {
namespace {

struct ResNetSpec {
  bool bottleneck;
  int blocks[4];
};

// torchvision's blocks reuse one ReLU module, so the relus of a block are "<p>.relu", "<p>.relu_1"...
ValueId basic_block(Builder& b, const std::string& p, ValueId x, int64_t inplanes, int64_t planes, int64_t stride) {
  ValueId y = b.conv(p + ".conv1", x, inplanes, planes, 3, stride, 1);
  y = b.relu(p + ".relu", b.batch_norm(p + ".bn1", y, planes));
  y = b.batch_norm(p + ".bn2", b.conv(p + ".conv2", y, planes, planes, 3, 1, 1), planes);
  ValueId identity = x;
  if (stride != 1 || inplanes != planes) {
    identity = b.conv(p + ".downsample.0", x, inplanes, planes, 1, stride, 0);
    identity = b.batch_norm(p + ".downsample.1", identity, planes);
  }
  return b.relu(p + ".relu", b.add(p + ".add", y, identity));
}

ValueId bottleneck(Builder& b, const std::string& p, ValueId x, int64_t inplanes, int64_t planes, int64_t stride) {
  const int64_t out = planes * 4;
  ValueId y = b.relu(p + ".relu", b.batch_norm(p + ".bn1", b.conv(p + ".conv1", x, inplanes, planes, 1, 1, 0), planes));
  y = b.relu(p + ".relu", b.batch_norm(p + ".bn2", b.conv(p + ".conv2", y, planes, planes, 3, stride, 1), planes));
  y = b.batch_norm(p + ".bn3", b.conv(p + ".conv3", y, planes, out, 1, 1, 0), out);
  ValueId identity = x;
  if (stride != 1 || inplanes != out) {
    identity = b.conv(p + ".downsample.0", x, inplanes, out, 1, stride, 0);
    identity = b.batch_norm(p + ".downsample.1", identity, out);
  }
  return b.relu(p + ".relu", b.add(p + ".add", y, identity));
}

}  // namespace

Graph build_resnet(const std::string& name, uint64_t seed) {
  ResNetSpec spec;
  if (name == "resnet18")
    spec = {false, {2, 2, 2, 2}};
  else if (name == "resnet50")
    spec = {true, {3, 4, 6, 3}};
  else
    throw Error("unknown ResNet variant '" + name + "'");

  Builder b(name, seed);
  ValueId x = b.input();
  x = b.relu("relu", b.batch_norm("bn1", b.conv("conv1", x, 3, 64, 7, 2, 3), 64));
  x = b.max_pool("maxpool", x, 3, 2, 1);
  const int64_t expansion = spec.bottleneck ? 4 : 1;
  int64_t inplanes = 64;
  for (int layer = 0; layer < 4; ++layer) {
    const int64_t planes = int64_t{64} << layer;
    for (int i = 0; i < spec.blocks[layer]; ++i) {
      const std::string p = "layer" + std::to_string(layer + 1) + "." + std::to_string(i);
      const int64_t stride = (layer > 0 && i == 0) ? 2 : 1;
      x = spec.bottleneck ? bottleneck(b, p, x, inplanes, planes, stride)
                          : basic_block(b, p, x, inplanes, planes, stride);
      inplanes = planes * expansion;
    }
  }
  x = b.flatten("flatten", b.global_avg_pool("avgpool", x));
  return b.finish(b.linear("fc", x, 512 * expansion, 1000, "logits"));
}

// Bi-Real-Net-18 (Liu et al., ECCV 2018): every 3x3 conv is binary and has its own real-valued
// shortcut, x + BN(BinaryConv(Sign(x))), so real values flow around each binary conv; downsampling
// shortcuts are AvgPool 2x2 -> real 1x1 conv -> BN. Stem (7x7 conv, BN, max pool) and classifier
// are real-valued (8-bit when quantized). 16 binary convs in 4 stages of 4 blocks.
Graph build_resnet18_binary(uint64_t seed) {
  Builder b("resnet18-binary", seed);
  ValueId x = b.input();
  x = b.max_pool("maxpool", b.batch_norm("bn1", b.conv("conv1", x, 3, 64, 7, 2, 3), 64), 3, 2, 1);
  int64_t inplanes = 64;
  for (int layer = 0; layer < 4; ++layer) {
    const int64_t planes = int64_t{64} << layer;
    for (int i = 0; i < 4; ++i) {
      const std::string p = "layer" + std::to_string(layer + 1) + "." + std::to_string(i);
      const int64_t stride = (layer > 0 && i == 0) ? 2 : 1;
      ValueId y = b.batch_norm(p + ".bn1", b.binary_conv(p + ".binary_conv", x, inplanes, planes, 3, stride, 1), planes);
      ValueId shortcut = x;
      if (stride != 1 || inplanes != planes) {
        shortcut = b.avg_pool(p + ".downsample.0", x, 2, stride);
        shortcut = b.batch_norm(p + ".downsample.2", b.conv(p + ".downsample.1", shortcut, inplanes, planes, 1, 1, 0), planes);
      }
      x = b.add(p + ".add", y, shortcut);
      inplanes = planes;
    }
  }
  x = b.flatten("flatten", b.global_avg_pool("avgpool", x));
  return b.finish(b.linear("fc", x, 512, 1000, "logits"));
}

}  // namespace lowbit::zoo
