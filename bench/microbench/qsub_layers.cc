// qsub_layers [--threads N] [--precisions w4a8,w2a8,w4a4,w2a2] [--model resnet50|resnet18] [--filter ROW]
//             [--rounds 12]
//
// Sub-byte QConv rows against the int8 kernel of the same node, per layer shape of the model,
// side by side in one process (the guard's question, and the sub-byte issue's per-node bar).
// For each conv shape and precision, one QConv node is built with random codes of that width
// (weights i4 / i2 stored packed, activations u8 / u4 / u2), and timed:
//   int8:  the same node with its weight codes in int8 storage, on the row the dispatch table
//          picks for it (what a sub-byte node runs when no sub-byte row applies);
//   every QConv row of the table that takes the sub-byte node on this host (kernel create + run,
//          the driver's packing, expansion and requantizing epilogue included).
// Timings alternate between the variants in rounds: ms is the minimum per variant, x the median
// over rounds of int8 ms / row ms in the same round (> 1: the row is faster); totals weight each
// shape by how often the model has it (from the minima).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lowbit/dispatch/registry.h"
#include "lowbit/ir/codes.h"
#include "lowbit/ir/graph.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/quant/precision.h"
#include "lowbit/runtime/thread_pool.h"

namespace {

using namespace lowbit;
using Clock = std::chrono::steady_clock;

struct Shape2 {
  int64_t C, H, M, K, S;
  int count;
};

// Every QConv shape of ResNet-50 and ResNet-18 but the stems (kept 8-bit), with multiplicity.
const Shape2 kResnet50[] = {
    {64, 56, 64, 1, 1, 1},     {64, 56, 64, 3, 1, 3},    {64, 56, 256, 1, 1, 4},   {256, 56, 64, 1, 1, 2},
    {256, 56, 128, 1, 1, 1},   {128, 56, 128, 3, 2, 1},  {128, 28, 512, 1, 1, 4},  {256, 56, 512, 1, 2, 1},
    {512, 28, 128, 1, 1, 3},   {128, 28, 128, 3, 1, 3},  {512, 28, 256, 1, 1, 1},  {256, 28, 256, 3, 2, 1},
    {256, 14, 1024, 1, 1, 6},  {512, 28, 1024, 1, 2, 1}, {1024, 14, 256, 1, 1, 5}, {256, 14, 256, 3, 1, 5},
    {1024, 14, 512, 1, 1, 1},  {512, 14, 512, 3, 2, 1},  {512, 7, 2048, 1, 1, 3},  {1024, 14, 2048, 1, 2, 1},
    {2048, 7, 512, 1, 1, 2},   {512, 7, 512, 3, 1, 2},
};
const Shape2 kResnet18[] = {
    {64, 56, 64, 3, 1, 4},   {64, 56, 128, 3, 2, 1},  {64, 56, 128, 1, 2, 1},  {128, 28, 128, 3, 1, 3},
    {128, 28, 256, 3, 2, 1}, {128, 28, 256, 1, 2, 1}, {256, 14, 256, 3, 1, 3}, {256, 14, 512, 3, 2, 1},
    {256, 14, 512, 1, 2, 1}, {512, 7, 512, 3, 1, 3},
};

struct Built {
  Graph g;
  std::vector<Tensor> inputs;
  Tensor y;
};

// One QConv with random codes: weights of width wcode (stored in `wstore`), activations acode.
Built build(const Shape2& s, DType wcode, DType wstore, DType acode, uint32_t seed) {
  Built b;
  Graph& g = b.g;
  std::mt19937 rng(seed);
  const DTypeInfo& wd = dtype_info(wcode);
  const DTypeInfo& ad = dtype_info(acode);
  Tensor x(DType::u8, {1, s.C, s.H, s.H});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(rng() % uint32_t(ad.qmax + 1));
  Tensor w(wstore, {s.M, s.C, s.K, s.K});
  for (int64_t i = 0; i < w.numel(); ++i)
    store_code(w.raw(), wstore, i, int32_t(wd.qmin + int64_t(rng() % uint32_t(wd.qmax - wd.qmin + 1))));
  ValueId vx = g.add_value("x", DType::u8, x.shape(), true);
  g.value(vx).quant = QuantParams{{0.02f}, {int32_t(ad.qmax / 3)}, -1, acode == DType::u8 ? std::nullopt : std::optional(acode)};
  ValueId vw = g.add_constant("w", w);
  g.value(vw).quant = QuantParams{std::vector<float>(size_t(s.M), 0.01f), std::vector<int32_t>(size_t(s.M), 0), 0, wcode};
  Tensor bias(DType::f32, {s.M});
  for (int64_t m = 0; m < s.M; ++m) bias.data<float>()[m] = float(int(rng() % 200) - 100) * 0.01f;
  ValueId vb = g.add_constant("b", bias);
  const int64_t pad = s.K / 2, OH = (s.H + 2 * pad - s.K) / s.S + 1;
  ValueId vy = g.add_value("y", DType::u8, {1, s.M, OH, OH}, true);
  g.value(vy).quant = QuantParams{{0.05f * float(s.C * s.K * s.K) / 64.0f}, {int32_t(ad.qmax / 2)}, -1,
                                  acode == DType::u8 ? std::nullopt : std::optional(acode)};
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{s.K, s.K});
  a.set("strides", std::vector<int64_t>{s.S, s.S});
  a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  a.set("act_min", 0.0f);
  g.add_node("QConv", "conv", {vx, vw, vb}, {vy}, a);
  b.inputs = {x, w, bias};
  b.y = Tensor(DType::u8, {1, s.M, OH, OH});
  return b;
}

struct Variant {
  std::string name;
  std::unique_ptr<Kernel> k;
  const Built* b;
  double best = 1e30;
  std::vector<double> per_round;  // this round's best, to pair with the int8 row's of the same round
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  std::string precisions = "w4a8,w2a8,w4a4,w2a2", model = "resnet50", filter;
  int rounds = 12;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--precisions")) precisions = argv[++i];
    else if (!std::strcmp(argv[i], "--model")) model = argv[++i];
    else if (!std::strcmp(argv[i], "--filter")) filter = argv[++i];
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[++i]);
  }
  const Target host = host_target();
  ThreadPool pool(threads);
  std::vector<Shape2> shapes = model == "resnet18" ? std::vector<Shape2>(std::begin(kResnet18), std::end(kResnet18))
                                                   : std::vector<Shape2>(std::begin(kResnet50), std::end(kResnet50));
  std::printf("%s conv shapes, batch 1, %d thread(s), host [%s]; ms per layer (minimum over alternating rounds);\n"
              "x = median over rounds of int8 ms / row ms\n", model.c_str(), threads, host.feature_string().c_str());
  for (size_t pos = 0; pos <= precisions.size();) {
    const size_t comma = std::min(precisions.find(',', pos), precisions.size());
    const Precision prec = parse_precision(precisions.substr(pos, comma - pos));
    pos = comma + 1;
    std::printf("\n== %s\n%-24s %2s %9s  %s\n", prec.name().c_str(), "layer (C>M @HxW)", "n", "int8 ms", "rows: ms (x)");
    std::map<std::string, double> total;
    double total_i8 = 0;
    std::string i8_name;
    for (const Shape2& s : shapes) {
      const Built sub = build(s, prec.weight, prec.weight, prec.act, 11);
      const Built i8 = build(s, prec.weight, DType::i8, prec.act, 11);
      std::vector<Variant> vs;
      {
        // The first int8 (not sub-byte) row that takes the node: what the guard falls back to.
        NodeContext ctx{i8.g, i8.g.nodes[0], host, threads};
        for (const KernelCandidate* kc : candidates_for("QConv"))
          if (kc->create && !kc->subbyte() && !kc->features.empty() && candidate_cannot_run(*kc, ctx).empty()) {
            i8_name = kc->name;
            vs.push_back({"int8", kc->create(ctx), &i8, 1e30, {}});
            break;
          }
      }
      for (const KernelCandidate* kc : candidates_for("QConv")) {
        if (!kc->create || kc->features.empty() || (!filter.empty() && kc->name.find(filter) == std::string::npos))
          continue;  // another architecture's row, a portable one, or filtered out
        NodeContext ctx{sub.g, sub.g.nodes[0], host, threads};
        if (!candidate_cannot_run(*kc, ctx).empty()) continue;
        vs.push_back({kc->name, kc->create(ctx), &sub, 1e30, {}});
      }
      for (int round = 0; round < rounds; ++round)
        for (Variant& v : vs) {
          std::vector<TensorView> in = {v.b->inputs[0].view(), v.b->inputs[1].view(), v.b->inputs[2].view()};
          Tensor y(DType::u8, v.b->y.shape());
          std::vector<TensorView> out = {y.view()};
          double round_best = 1e30;
          for (int r = 0; r < 3; ++r) {
            const auto t0 = Clock::now();
            v.k->run(in, out, pool);
            round_best = std::min(round_best, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          }
          v.best = std::min(v.best, round_best);
          v.per_round.push_back(round_best);
        }
      char label[64];
      std::snprintf(label, sizeof label, "%ld>%ld %ldx%ld/%ld @%ld", long(s.C), long(s.M), long(s.K), long(s.K),
                    long(s.S), long(s.H));
      std::printf("%-24s %2d %9.3f ", label, s.count, vs[0].best);
      total_i8 += s.count * vs[0].best;
      for (size_t i = 1; i < vs.size(); ++i) {
        // x: the median over rounds of (int8 / row) within a round, robust to a shared host's slow
        // stretches, which shift both alike.
        std::vector<double> ratio;
        for (size_t r = 0; r < vs[i].per_round.size(); ++r) ratio.push_back(vs[0].per_round[r] / vs[i].per_round[r]);
        std::printf(" %s %.3f (%.2fx)", vs[i].name.c_str(), vs[i].best, median(ratio));
        total[vs[i].name] += s.count * vs[i].best;
      }
      std::printf("\n");
    }
    std::printf("%-24s    %9.3f  (int8 row: %s)\n", "total (weighted)", total_i8, i8_name.c_str());
    for (auto& [name, ms] : total) std::printf("  %-48s %9.3f ms  %.2fx\n", name.c_str(), ms, total_i8 / ms);
  }
}
