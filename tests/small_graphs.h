#pragma once
// Pieces of the small hand-built graphs the quantizer tests make: 1x1 convs with seeded normal
// weights, and the calibrate-and-quantize step they all take (2 threads, 3 synthetic samples,
// host-independent graph).
#include <memory>
#include <random>

#include "lowbit/ir/graph.h"
#include "lowbit/quant/guard.h"
#include "lowbit/runtime/compiled_model.h"

namespace lowbit::test {

// A 1x1 Conv cin -> cout on `in`, weights and bias drawn from N(0, stddev) by `rng`.
inline ValueId add_conv1x1(Graph& g, std::mt19937& rng, float stddev, ValueId in, int64_t cin, int64_t cout) {
  std::normal_distribution<float> d(0.0f, stddev);
  Tensor w(DType::f32, {cout, cin, 1, 1}), b(DType::f32, {cout});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = d(rng);
  for (int64_t i = 0; i < b.numel(); ++i) b.data<float>()[i] = d(rng);
  ValueId y = g.add_value(g.unique_name("conv_out"));
  g.add_node("Conv", g.unique_name("conv"), {in, g.add_constant(g.unique_name("w"), w), g.add_constant(g.unique_name("b"), b)},
             {y});
  return y;
}

inline QuantizeOptions small_quantize_options() {
  QuantizeOptions q;
  q.synthetic_samples = 3;
  return q;
}

// `graph` compiled in fp32 on 2 threads (into `fp32`, its activations left unfused to be
// calibrated), then quantized with `q` and the guard allowing every kernel.
inline QuantizedBuild quantize_small(Graph graph, std::unique_ptr<CompiledModel>& fp32,
                                     const QuantizeOptions& q = small_quantize_options()) {
  CompileOptions o;
  o.threads = 2;
  CompileOptions fo = o;
  fo.fuse_post_ops = false;  // to be calibrated
  fp32 = CompiledModel::compile(std::move(graph), fo);
  return build_quantized(*fp32, o, q, SlowPolicy::allow);
}

}  // namespace lowbit::test
