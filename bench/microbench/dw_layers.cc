// dw_layers [--threads N] [--target SPEC] [--only SUBSTRING]: depthwise convs of MobileNetV2 (3x3) and EfficientNet-B0
// (5x5), fp32 against int8, side by side in one run, batch 1. For each layer, a one-node graph
// (depthwise Conv + Relu) compiled for the target in fp32 and quantized by lowbit (int8, synthetic
// calibration, no guard); the conv node's time from run_profiled, the two models alternating, the
// minimum over repetitions. The int8 column is what the guard's depthwise rule is about
// (dispatch/table_qu8.cc): a ratio below 1 on any layer means the rule has to come back.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lowbit/ir/graph.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/quant/quantize.h"
#include "lowbit/runtime/compiled_model.h"

namespace {

using namespace lowbit;

struct Layer {
  const char* name;
  int64_t C, H, K, S;
};

// MobileNetV2's 17 depthwise convs (one row per distinct shape, with its count) and EfficientNet-B0's 5x5 ones.
struct Row {
  Layer l;
  int count;
};
const Row kLayers[] = {
    {{"mnv2 3x3 32 @112", 32, 112, 3, 1}, 1},     {{"mnv2 3x3/2 96 @112", 96, 112, 3, 2}, 1},
    {{"mnv2 3x3 144 @56", 144, 56, 3, 1}, 1},     {{"mnv2 3x3/2 144 @56", 144, 56, 3, 2}, 1},
    {{"mnv2 3x3 192 @28", 192, 28, 3, 1}, 2},     {{"mnv2 3x3/2 192 @28", 192, 28, 3, 2}, 1},
    {{"mnv2 3x3 384 @14", 384, 14, 3, 1}, 4},     {{"mnv2 3x3 576 @14", 576, 14, 3, 1}, 2},
    {{"mnv2 3x3/2 576 @14", 576, 14, 3, 2}, 1},   {{"mnv2 3x3 960 @7", 960, 7, 3, 1}, 3},
    {{"effb0 5x5/2 144 @56", 144, 56, 5, 2}, 1},  {{"effb0 5x5 240 @28", 240, 28, 5, 1}, 1},
    {{"effb0 5x5 480 @14", 480, 14, 5, 1}, 2},    {{"effb0 5x5 672 @14", 672, 14, 5, 1}, 2},
    {{"effb0 5x5/2 672 @14", 672, 14, 5, 2}, 1},  {{"effb0 5x5 1152 @7", 1152, 7, 5, 1}, 3},
};

struct Timed {
  std::unique_ptr<CompiledModel> model;
  NodeId conv = -1;
  std::string kernel;
};

Timed find_conv(std::unique_ptr<CompiledModel> m) {
  Timed n;
  for (const Step& s : m->steps()) {
    const std::string& op = m->graph().nodes[static_cast<size_t>(s.node)].op;
    if (op == "Conv" || op == "QConv") n.conv = s.node, n.kernel = s.choice.chosen->name;
  }
  n.model = std::move(m);
  return n;
}

double node_ms(Timed& n, const std::vector<Tensor>& in, std::vector<LayerTiming>& t) {
  t.clear();
  n.model->run_profiled(in, t);
  for (const LayerTiming& lt : t)
    if (lt.node == n.conv) return lt.ms;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  Target target = host_target();
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--target") && i + 1 < argc) target = parse_target(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
  }
  std::printf("batch 1, %d thread(s), target %s; ms per layer, minimum over alternating repetitions\n", threads,
              target.spec().c_str());
  std::printf("%-22s %5s %9s %9s %7s  %s\n", "layer", "count", "fp32 ms", "int8 ms", "fp32/i8", "kernels");
  double f_sum = 0, q_sum = 0, worst = 1e30;
  for (const Row& row : kLayers) {
    const Layer& L = row.l;
    if (!only.empty() && std::string(L.name).find(only) == std::string::npos) continue;
    std::mt19937 rng(7);
    std::normal_distribution<float> d(0.0f, 1.0f);
    Graph g;
    ValueId x = g.add_value("x", DType::f32, {1, L.C, L.H, L.H}, true);
    g.inputs.push_back(x);
    Tensor wt(DType::f32, {L.C, 1, L.K, L.K});
    for (int64_t i = 0; i < wt.numel(); ++i) wt.data<float>()[i] = d(rng) * 0.3f;
    ValueId w = g.add_constant("w", wt);
    Tensor bt(DType::f32, {L.C});
    for (int64_t i = 0; i < bt.numel(); ++i) bt.data<float>()[i] = d(rng) * 0.1f;
    ValueId b = g.add_constant("b", bt);
    ValueId y = g.add_value("y"), r = g.add_value("r");
    Attributes a;
    a.set("strides", std::vector<int64_t>{L.S, L.S});
    a.set("pads", std::vector<int64_t>{L.K / 2, L.K / 2, L.K / 2, L.K / 2});
    a.set("group", L.C);
    g.add_node("Conv", "dw", {x, w, b}, {y}, a);
    g.add_node("Relu", "relu", {y}, {r}, {});
    g.outputs = {r};
    validate(g);
    CompileOptions o;
    o.threads = threads;
    o.target = target;
    Timed f = find_conv(CompiledModel::compile(g, o));
    QuantizeOptions q;
    q.synthetic_samples = 2;
    Timed i8 = find_conv(CompiledModel::compile(quantize_model(*f.model, q), o));
    std::vector<Tensor> in = {Tensor(DType::f32, {1, L.C, L.H, L.H})};
    for (int64_t i = 0; i < in[0].numel(); ++i) in[0].data<float>()[i] = d(rng);
    double fb = 1e30, qb = 1e30, total = 0;
    std::vector<LayerTiming> t;
    for (int rep = 0; rep < 10 || total < 400; ++rep) {
      const double fm = node_ms(f, in, t), qm = node_ms(i8, in, t);
      fb = std::min(fb, fm), qb = std::min(qb, qm), total += fm + qm;
      if (rep > 3000) break;
    }
    f_sum += fb * row.count, q_sum += qb * row.count, worst = std::min(worst, fb / qb);
    std::printf("%-22s %5d %9.3f %9.3f %6.2fx  %s / %s\n", L.name, row.count, fb, qb, fb / qb, f.kernel.c_str(),
                i8.kernel.c_str());
  }
  std::printf("%-22s %5s %9.3f %9.3f %6.2fx  (layers times their counts; worst layer %.2fx)\n", "all", "", f_sum,
              q_sum, f_sum / q_sum, worst);
  return 0;
}
