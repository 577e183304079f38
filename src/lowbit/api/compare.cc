#include "lowbit/api/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "lowbit/common/error.h"

namespace lowbit {

OutputMetrics compare_output(const Tensor& ref, const Tensor& q, float mask_threshold) {
  if (ref.dtype() != DType::f32 || q.dtype() != DType::f32 || ref.shape() != q.shape())
    throw Error("compare: the models' first outputs differ (" + std::string(dtype_name(ref.dtype())) + " " +
                shape_str(ref.shape()) + " vs " + dtype_name(q.dtype()) + " " + shape_str(q.shape()) + ")");
  const float *a = ref.data<float>(), *b = q.data<float>();
  double dot = 0, na = 0, nb = 0, diff = 0;
  int64_t both = 0, either = 0;
  const int64_t n = ref.numel();
  for (int64_t i = 0; i < n; ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    const bool ma = a[i] > mask_threshold, mb = b[i] > mask_threshold;
    both += ma && mb;
    either += ma || mb;
  }
  if (n == 0) return {1, 0, true, true, 1};
  const int64_t best_a = std::max_element(a, a + n) - a, best_b = std::max_element(b, b + n) - b;
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = i;
  const int64_t k = std::min<int64_t>(5, n);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t x, int64_t y) { return b[x] > b[y]; });
  const bool top5 = std::find(idx.begin(), idx.begin() + k, best_a) != idx.begin() + k;
  return {dot / std::sqrt(na * nb + 1e-30), std::sqrt(diff / (na + 1e-30)), best_a == best_b, top5,
          either ? static_cast<double>(both) / static_cast<double>(either) : 1.0};
}

void add_output(OutputAgreement& a, const OutputMetrics& m) {
  a.cosine_mean += m.cosine;
  a.cosine_min = std::min(a.cosine_min, m.cosine);
  a.rel_l2_mean += m.rel_l2;
  a.top1 += m.top1;
  a.top5 += m.top5;
  a.mask_iou_mean += m.mask_iou;
  a.mask_iou_min = std::min(a.mask_iou_min, m.mask_iou);
}

void finish_agreement(OutputAgreement& a, int n) {
  const double d = n > 0 ? n : 1;
  a.cosine_mean /= d, a.rel_l2_mean /= d, a.top1 /= d, a.top5 /= d, a.mask_iou_mean /= d;
}

void SqnrAccumulator::add(const Tensor& ref, const TensorView& t, const Value& val) {
  if (ref.dtype() != DType::f32 || ref.shape() != t.shape) return;
  const float* r = ref.data<float>();
  auto sum = [&](auto value) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double d = r[i] - static_cast<double>(value(i));
      signal += static_cast<double>(r[i]) * r[i];
      noise += d * d;
    }
  };
  if (t.dtype == DType::f32) {  // a layer that writes floats itself (a classifier's QGemm)
    sum([&](int64_t i) { return t.as<float>()[i]; });
    return;
  }
  if (t.dtype != DType::u8 || !val.quant || val.quant->scale.empty() || val.quant->zero_point.empty()) return;
  const float scale = val.quant->scale[0], zp = static_cast<float>(val.quant->zero_point[0]);
  sum([&](int64_t i) { return scale * (static_cast<float>(t.as<uint8_t>()[i]) - zp); });
}

namespace {

nlohmann::json agreement_json(const OutputAgreement& a) {
  return {{"cosine_mean", a.cosine_mean},    {"cosine_min", a.cosine_min},    {"rel_l2_mean", a.rel_l2_mean},
          {"top1_agreement", a.top1},         {"top5_agreement", a.top5},      {"mask_iou_mean", a.mask_iou_mean},
          {"mask_iou_min", a.mask_iou_min}};
}

}  // namespace

Comparison compare_models(const BuiltModel& fp, const BuiltModel& q, const BuiltModel* int8,
                          const std::vector<std::vector<Tensor>>& inputs, float mask_threshold) {
  const Graph& fg = fp.model->graph();
  const Graph& qg = q.model->graph();
  struct Acc {
    SqnrAccumulator sqnr;
    std::string op;
  };
  std::map<std::string, Acc> layer;
  std::map<std::string, std::string> producer_op;
  for (const Node& n : qg.nodes)
    for (ValueId v : n.outputs)
      if (v != kNoValue) producer_op[qg.value(v).name] = n.op;
  Comparison c;
  c.inputs = static_cast<int>(inputs.size());
  c.mask_threshold = mask_threshold;
  c.has_vs_int8 = int8 != nullptr;
  for (const auto& in : inputs) {
    std::map<std::string, Tensor> ref;
    const auto fout = fp.model->run_observed(in, [&](ValueId v, const TensorView& t) {
      if (t.dtype != DType::f32) return;
      Tensor copy(t.dtype, t.shape);
      std::memcpy(copy.raw(), t.data, static_cast<size_t>(t.nbytes()));
      ref[fg.value(v).name] = std::move(copy);
    });
    const auto qout = q.model->run_observed(in, [&](ValueId v, const TensorView& t) {
      const Value& val = qg.value(v);
      auto it = ref.find(val.name);
      if (it == ref.end() || it->second.shape() != t.shape || t.dtype != DType::u8) return;
      Acc& a = layer[val.name];
      a.op = producer_op[val.name];
      a.sqnr.add(it->second, t, val);
    });
    if (fout.empty() || qout.empty()) throw Error("compare: a model without outputs");
    add_output(c.vs_fp32, compare_output(fout[0], qout[0], mask_threshold));
    if (int8) add_output(c.vs_int8, compare_output(int8->model->run(in)[0], qout[0], mask_threshold));
  }
  finish_agreement(c.vs_fp32, c.inputs);
  finish_agreement(c.vs_int8, c.inputs);
  for (auto& [name, a] : layer)
    c.layers.push_back({name, a.op, a.sqnr.db()});
  std::sort(c.layers.begin(), c.layers.end(),
            [](const LayerSqnr& x, const LayerSqnr& y) { return std::tie(x.sqnr_db, x.value) < std::tie(y.sqnr_db, y.value); });
  return c;
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerSqnr& l : c.layers) layers.push_back({{"value", l.value}, {"op", l.op}, {"sqnr_db", l.sqnr_db}});
  nlohmann::json j = {{"inputs", c.inputs},
                      {"mask_threshold", c.mask_threshold},
                      {"vs_fp32", agreement_json(c.vs_fp32)},
                      {"layers", layers}};
  if (c.has_vs_int8) j["vs_int8"] = agreement_json(c.vs_int8);
  return j;
}

}  // namespace lowbit
