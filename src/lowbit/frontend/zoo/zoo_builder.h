#pragma once
// Internal to the zoo: a small graph builder that emits ONNX-style nodes and draws weights from a
// portable PRNG (std::normal_distribution differs between standard libraries).
#include <cstdint>
#include <string>
#include <unordered_set>

#include "lowbit/ir/graph.h"

namespace lowbit::zoo {

// splitmix64 with Box-Muller normals: bit-identical on every platform with IEEE doubles.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next_u64();
  double uniform();  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal(double mean, double stddev);

 private:
  uint64_t state_;
  bool have_spare_ = false;
  double spare_ = 0.0;
};

class Builder {
 public:
  Builder(const std::string& model_name, uint64_t seed);

  // The graph input "input", f32 1x3x224x224.
  ValueId input();

  // Bias-free unless `bias`; weights "<prefix>.weight" (+ "<prefix>.bias").
  ValueId conv(const std::string& prefix, ValueId x, int64_t cin, int64_t cout, int64_t kernel, int64_t stride,
               int64_t pad, int64_t groups = 1, bool bias = false);
  // A binary conv as binary training frameworks export it: Sign(x) feeding a bias-free Conv whose
  // weights are alpha * sign(W) with alpha = mean |W| per output channel (XNOR-Net / Bi-Real).
  ValueId binary_conv(const std::string& prefix, ValueId x, int64_t cin, int64_t cout, int64_t kernel, int64_t stride,
                      int64_t pad);
  ValueId avg_pool(const std::string& name, ValueId x, int64_t kernel, int64_t stride);
  // Inference-mode BN with non-trivial statistics: folding bugs must change the output.
  ValueId batch_norm(const std::string& prefix, ValueId x, int64_t channels);
  ValueId relu(const std::string& name, ValueId x);
  ValueId relu6(const std::string& name, ValueId x);  // Clip with min/max inputs
  ValueId max_pool(const std::string& name, ValueId x, int64_t kernel, int64_t stride, int64_t pad);
  ValueId add(const std::string& name, ValueId a, ValueId b);
  ValueId global_avg_pool(const std::string& name, ValueId x);
  ValueId flatten(const std::string& name, ValueId x);
  // y = x W^T + b with W [out, in] ("<prefix>.weight", "<prefix>.bias"); output named `out_name`.
  ValueId linear(const std::string& prefix, ValueId x, int64_t in, int64_t out, const std::string& out_name);

  // Marks `logits` as the output (f32 1x1000) and hands the graph over.
  Graph finish(ValueId logits);

 private:
  Tensor normal_tensor(Shape shape, double mean, double stddev);
  Tensor uniform_tensor(Shape shape, double lo, double hi);
  ValueId constant(const std::string& name, Tensor t);
  // A fresh value/node name: `base`, or `base_1`, `base_2`... when torchvision reuses a module.
  std::string fresh(const std::string& base);
  ValueId node(const std::string& op, const std::string& name, std::vector<ValueId> inputs, Attributes attrs = {});

  Graph g_;
  Rng rng_;
  std::unordered_set<std::string> names_;
  ValueId clip_min_ = kNoValue, clip_max_ = kNoValue;
};

Graph build_resnet(const std::string& name, uint64_t seed);
Graph build_mobilenet_v2(uint64_t seed);
Graph build_resnet18_binary(uint64_t seed);

}  // namespace lowbit::zoo
