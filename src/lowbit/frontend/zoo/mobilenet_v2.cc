// torchvision.models.mobilenet_v2 (width 1.0). Dropout is the identity at inference and omitted.
#include "lowbit/frontend/zoo/zoo_builder.h"

namespace lowbit::zoo {
namespace {

// Conv2dNormActivation: conv "<p>.0", BN "<p>.1", ReLU6 "<p>.2".
ValueId conv_bn_relu6(Builder& b, const std::string& p, ValueId x, int64_t cin, int64_t cout, int64_t kernel,
                      int64_t stride, int64_t groups) {
  ValueId y = b.conv(p + ".0", x, cin, cout, kernel, stride, (kernel - 1) / 2, groups);
  return b.relu6(p + ".2", b.batch_norm(p + ".1", y, cout));
}

ValueId inverted_residual(Builder& b, const std::string& p, ValueId x, int64_t inp, int64_t oup, int64_t stride,
                          int64_t expand) {
  const int64_t hidden = inp * expand;
  int idx = 0;  // position in the block's nn.Sequential `conv`
  ValueId y = x;
  if (expand != 1) y = conv_bn_relu6(b, p + ".conv." + std::to_string(idx++), y, inp, hidden, 1, 1, 1);
  y = conv_bn_relu6(b, p + ".conv." + std::to_string(idx++), y, hidden, hidden, 3, stride, hidden);
  y = b.conv(p + ".conv." + std::to_string(idx), y, hidden, oup, 1, 1, 0);  // linear bottleneck
  y = b.batch_norm(p + ".conv." + std::to_string(idx + 1), y, oup);
  if (stride == 1 && inp == oup) y = b.add(p + ".add", x, y);
  return y;
}

}  // namespace

Graph build_mobilenet_v2(uint64_t seed) {
  struct Stage {
    int64_t expand, channels, repeats, stride;
  };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  Builder b("mobilenet_v2", seed);
  ValueId x = b.input();
  x = conv_bn_relu6(b, "features.0", x, 3, 32, 3, 2, 1);
  int64_t cin = 32;
  int feature = 1;
  for (const Stage& s : stages)
    for (int64_t i = 0; i < s.repeats; ++i) {
      x = inverted_residual(b, "features." + std::to_string(feature++), x, cin, s.channels, i == 0 ? s.stride : 1,
                            s.expand);
      cin = s.channels;
    }
  x = conv_bn_relu6(b, "features." + std::to_string(feature), x, cin, 1280, 1, 1, 1);
  x = b.flatten("flatten", b.global_avg_pool("avgpool", x));
  return b.finish(b.linear("classifier.1", x, 1280, 1000, "logits"));
}

}  // namespace lowbit::zoo
