#include "lowbit/frontend/zoo/zoo.h"

#include <cmath>

#include "lowbit/common/error.h"
#include "lowbit/frontend/zoo/zoo_builder.h"

namespace lowbit {
namespace zoo {

uint64_t Rng::next_u64() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Rng::normal(double mean, double stddev) {
  if (have_spare_) {
    have_spare_ = false;
    return mean + stddev * spare_;
  }
  double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
  double u2 = uniform();
  double r = std::sqrt(-2.0 * std::log(u1));
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  spare_ = r * std::sin(kTwoPi * u2);
  have_spare_ = true;
  return mean + stddev * r * std::cos(kTwoPi * u2);
}

Builder::Builder(const std::string& model_name, uint64_t seed) : rng_(seed) { g_.name = model_name; }

std::string Builder::fresh(const std::string& base) {
  std::string name = base;
  for (int i = 1; names_.count(name); ++i) name = base + "_" + std::to_string(i);
  names_.insert(name);
  return name;
}

Tensor Builder::normal_tensor(Shape shape, double mean, double stddev) {
  Tensor t(DType::f32, std::move(shape));
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(rng_.normal(mean, stddev));
  return t;
}

Tensor Builder::uniform_tensor(Shape shape, double lo, double hi) {
  Tensor t(DType::f32, std::move(shape));
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(rng_.uniform(lo, hi));
  return t;
}

ValueId Builder::constant(const std::string& name, Tensor t) { return g_.add_constant(fresh(name), std::move(t)); }

ValueId Builder::node(const std::string& op, const std::string& name, std::vector<ValueId> inputs, Attributes attrs) {
  std::string n = fresh(name);
  ValueId out = g_.add_value(n);
  g_.add_node(op, n, std::move(inputs), {out}, std::move(attrs));
  return out;
}

ValueId Builder::input() {
  ValueId x = g_.add_value(fresh("input"), DType::f32, {1, 3, 224, 224}, true);
  g_.inputs.push_back(x);
  return x;
}

ValueId Builder::conv(const std::string& prefix, ValueId x, int64_t cin, int64_t cout, int64_t kernel, int64_t stride,
                      int64_t pad, int64_t groups, bool bias) {
  // std = sqrt(1 / fan_in) rather than torchvision's sqrt(2 / fan_out): with random (not
  // data-calibrated) BN statistics nothing renormalises activations, and this keeps them O(1)
  // through ResNet-50's 53 convolutions (measured: logits rms ~0.2..2 for all three models).
  int64_t fan_in = cin / groups * kernel * kernel;
  std::vector<ValueId> in{x, constant(prefix + ".weight", normal_tensor({cout, cin / groups, kernel, kernel}, 0.0,
                                                                        std::sqrt(1.0 / static_cast<double>(fan_in))))};
  if (bias) in.push_back(constant(prefix + ".bias", normal_tensor({cout}, 0.0, 0.01)));
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{kernel, kernel});
  a.set("strides", std::vector<int64_t>{stride, stride});
  a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  a.set("dilations", std::vector<int64_t>{1, 1});
  a.set("group", groups);
  return node("Conv", prefix, std::move(in), std::move(a));
}

ValueId Builder::binary_conv(const std::string& prefix, ValueId x, int64_t cin, int64_t cout, int64_t kernel,
                             int64_t stride, int64_t pad) {
  ValueId s = node("Sign", prefix + ".sign", {x});
  const int64_t per = cin * kernel * kernel;
  Tensor w = normal_tensor({cout, cin, kernel, kernel}, 0.0, std::sqrt(1.0 / static_cast<double>(per)));
  float* p = w.data<float>();
  for (int64_t m = 0; m < cout; ++m) {
    double sum = 0;
    for (int64_t k = 0; k < per; ++k) sum += std::fabs(p[m * per + k]);
    const float alpha = static_cast<float>(sum / static_cast<double>(per));
    for (int64_t k = 0; k < per; ++k) p[m * per + k] = p[m * per + k] < 0.0f ? -alpha : alpha;
  }
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{kernel, kernel});
  a.set("strides", std::vector<int64_t>{stride, stride});
  a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  a.set("dilations", std::vector<int64_t>{1, 1});
  a.set("group", int64_t{1});
  return node("Conv", prefix, {s, constant(prefix + ".weight", std::move(w))}, std::move(a));
}

ValueId Builder::avg_pool(const std::string& name, ValueId x, int64_t kernel, int64_t stride) {
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{kernel, kernel});
  a.set("strides", std::vector<int64_t>{stride, stride});
  a.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  a.set("ceil_mode", int64_t{0});
  a.set("count_include_pad", int64_t{0});
  return node("AveragePool", name, {x}, std::move(a));
}

ValueId Builder::batch_norm(const std::string& prefix, ValueId x, int64_t c) {
  ValueId gamma = constant(prefix + ".weight", uniform_tensor({c}, 0.5, 1.5));
  ValueId beta = constant(prefix + ".bias", normal_tensor({c}, 0.0, 0.1));
  ValueId mean = constant(prefix + ".running_mean", normal_tensor({c}, 0.0, 0.1));
  ValueId var = constant(prefix + ".running_var", uniform_tensor({c}, 0.5, 1.5));
  Attributes a;
  a.set("epsilon", 1e-5f);  // torch.nn.BatchNorm2d's default
  a.set("momentum", 0.9f);
  return node("BatchNormalization", prefix, {x, gamma, beta, mean, var}, std::move(a));
}

ValueId Builder::relu(const std::string& name, ValueId x) { return node("Relu", name, {x}); }

ValueId Builder::relu6(const std::string& name, ValueId x) {
  if (clip_min_ == kNoValue) {  // one pair of scalars shared by every Clip, as torch.onnx emits
    Tensor lo(DType::f32, {}), hi(DType::f32, {});
    hi.data<float>()[0] = 6.0f;
    clip_min_ = constant("relu6.min", lo);
    clip_max_ = constant("relu6.max", hi);
  }
  return node("Clip", name, {x, clip_min_, clip_max_});
}

ValueId Builder::max_pool(const std::string& name, ValueId x, int64_t kernel, int64_t stride, int64_t pad) {
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{kernel, kernel});
  a.set("strides", std::vector<int64_t>{stride, stride});
  a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  a.set("ceil_mode", int64_t{0});
  return node("MaxPool", name, {x}, std::move(a));
}

ValueId Builder::add(const std::string& name, ValueId a, ValueId b) { return node("Add", name, {a, b}); }

ValueId Builder::global_avg_pool(const std::string& name, ValueId x) { return node("GlobalAveragePool", name, {x}); }

ValueId Builder::flatten(const std::string& name, ValueId x) {
  Attributes a;
  a.set("axis", int64_t{1});
  return node("Flatten", name, {x}, std::move(a));
}

ValueId Builder::linear(const std::string& prefix, ValueId x, int64_t in, int64_t out, const std::string& out_name) {
  ValueId w = constant(prefix + ".weight", normal_tensor({out, in}, 0.0, 0.01));
  ValueId b = constant(prefix + ".bias", normal_tensor({out}, 0.0, 0.01));
  Attributes a;
  a.set("alpha", 1.0f);
  a.set("beta", 1.0f);
  a.set("transB", int64_t{1});
  std::string name = fresh(prefix);
  ValueId y = g_.add_value(fresh(out_name));
  g_.add_node("Gemm", name, {x, w, b}, {y}, std::move(a));
  return y;
}

Graph Builder::finish(ValueId logits) {
  Value& v = g_.value(logits);
  v.shape = {1, 1000};
  v.shape_known = true;
  g_.outputs.push_back(logits);
  return std::move(g_);
}

}  // namespace zoo

std::vector<std::string> zoo_model_names() { return {"resnet18", "resnet50", "mobilenet_v2", "resnet18-binary"}; }

bool is_zoo_model(const std::string& name) {
  for (const auto& n : zoo_model_names())
    if (n == name) return true;
  return false;
}

Graph build_zoo_model(const std::string& name, uint64_t seed) {
  if (name == "resnet18" || name == "resnet50") return zoo::build_resnet(name, seed);
  if (name == "mobilenet_v2") return zoo::build_mobilenet_v2(seed);
  if (name == "resnet18-binary") return zoo::build_resnet18_binary(seed);
  std::string known;
  for (const auto& n : zoo_model_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown zoo model '" + name + "' (known: " + known + ")");
}

}  // namespace lowbit
