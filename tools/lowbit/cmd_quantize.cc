// lowbit quantize / compare: make an int8 artifact; measure what quantization cost in accuracy.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "lowbit/artifact/artifact.h"
#include "lowbit/common/error.h"
#include "lowbit/io/npy.h"
#include "lowbit/io/synthetic.h"

namespace lowbit::cli {

void register_quantize(CLI::App& app) {
  struct Opts {
    ModelOptions m;
    std::string out;
    int bits = 0, weight_bits = 0, act_bits = 0;  // 0: not given
    bool prepack = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("quantize", "calibrate and quantize a model; write an .lbm artifact");
  add_model_options(*cmd, o->m);
  cmd->add_option("-o,--output", o->out, "the .lbm artifact to write")->required();
  cmd->add_option("--bits", o->bits, "weight and activation bits: 8, 4, 2 or 1 (sets both; --precision wNaM also does; 1 = w1a1)");
  cmd->add_option("--weight-bits", o->weight_bits, "weight bits: 8, 4 or 2 (1 only with --act-bits 1)");
  cmd->add_option("--act-bits", o->act_bits, "activation bits: 8, 4 or 2 (1 only with --weight-bits 1)");
  cmd->add_flag("--prepack", o->prepack,
                "also store each conv kernel's weights in its own layout (a bigger file): compiled on the same "
                "kind of host (target, tile, threads-independent), the artifact's weights are read in place from "
                "its mapping instead of being packed again; elsewhere they are packed as usual");
  cmd->callback([o] {
    auto t0 = std::chrono::steady_clock::now();
    ModelOptions m = o->m;
    // --precision (default int8 here), then --bits, then --weight-bits / --act-bits refine it.
    Precision p = m.precision == "fp32" ? kInt8 : parse_precision(m.precision);
    if (o->bits) p = {weight_code_for_bits(o->bits), act_code_for_bits(o->bits)};
    if (o->weight_bits) p.weight = weight_code_for_bits(o->weight_bits);
    if (o->act_bits) p.act = act_code_for_bits(o->act_bits);
    if ((p.weight == DType::b1) != (p.act == DType::u1))
      throw Error("1 bit is w1a1 only (binary weights and activations: the XOR-popcount kernels need both); got " +
                  std::string(p.weight == DType::b1 ? "1-bit weights with " + std::to_string(p.act_bits()) + "-bit activations"
                                                    : std::to_string(p.weight_bits()) + "-bit weights with 1-bit activations"));
    m.precision = p.name();
    BuiltModel b = build_model(m, /*foreign_ok=*/true);
    nlohmann::json meta = artifact_metadata(b, std::filesystem::path(m.model).filename().string());
    meta["mode"] = m.mode;
    meta["keep_8bit"] = m.keep_8bit;
    meta["calibration"] = m.calibration;
    meta["calib_samples"] = m.calib_samples;
    meta["calib_data"] = m.calib_data.empty() ? "synthetic" : "npy folder";
    meta["autotuned"] = m.autotune;
    // The compiled graph: optimised, quantized, and with the kernels --autotune pinned.
    int prepacked = 0;
    int64_t prepacked_bytes = 0;
    if (o->prepack) {
      meta["prepacked"] = true;
      save_artifact(o->out, b.model->graph_with_prepacked_weights(&prepacked, &prepacked_bytes), meta.dump());
    } else {
      save_artifact(o->out, b.model->graph(), meta.dump());
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    int64_t fp32_bytes = 0, total = 0;
    std::map<std::string, int64_t> per;
    for (const Value& v : b.model->graph().values)
      if (v.constant) per[dtype_name(v.dtype)] += v.constant->nbytes(), total += v.constant->nbytes();
    (void)fp32_bytes;
    std::printf("wrote %s (%s) in %.1f s: weights %s", o->out.c_str(),
                human_bytes(static_cast<int64_t>(std::filesystem::file_size(o->out))).c_str(), ms / 1e3,
                human_bytes(total).c_str());
    for (auto& [dt, bytes] : per) std::printf(" [%s %s]", dt.c_str(), human_bytes(bytes).c_str());
    std::printf("\n");
    if (o->prepack)
      std::printf("prepacked: the weights of %d node(s) also in their kernels' layouts for %s (%s); a compile on "
                  "another kind of host packs them as usual\n",
                  prepacked, b.model->target().name.c_str(), human_bytes(prepacked_bytes).c_str());
  });
}

namespace {

struct OutputMetrics {
  double cosine, rel_l2;
  bool top1, top5;
};

OutputMetrics compare_outputs(const Tensor& ref, const Tensor& q) {
  const float *a = ref.data<float>(), *b = q.data<float>();
  double dot = 0, na = 0, nb = 0, diff = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
  }
  int64_t n = ref.numel(), best_a = std::max_element(a, a + n) - a, best_b = std::max_element(b, b + n) - b;
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = i;
  std::partial_sort(idx.begin(), idx.begin() + std::min<int64_t>(5, n), idx.end(),
                    [&](int64_t x, int64_t y) { return b[x] > b[y]; });
  bool top5 = std::find(idx.begin(), idx.begin() + std::min<int64_t>(5, n), best_a) != idx.begin() + std::min<int64_t>(5, n);
  return {dot / std::sqrt(na * nb + 1e-30), std::sqrt(diff / (na + 1e-30)), best_a == best_b, top5};
}

float dequant(const TensorView& t, const QuantParams& q, int64_t i) {
  return q.scale[0] * (static_cast<float>(t.as<uint8_t>()[i]) - static_cast<float>(q.zero_point[0]));
}

}  // namespace

void register_compare(CLI::App& app) {
  struct Opts {
    ModelOptions m;
    std::string inputs;
    int samples = 16;
    int layers = 15;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("compare", "accuracy of the quantized model against fp32, overall and per layer");
  add_model_options(*cmd, o->m);
  cmd->add_option("--inputs", o->inputs, "folder of .npy inputs (default: seeded synthetic, not the calibration ones)");
  cmd->add_option("--samples", o->samples, "synthetic inputs to compare on (default 16)")->check(CLI::PositiveNumber);
  cmd->add_option("--layers", o->layers, "worst layers to list by SQNR (default 15)");
  cmd->callback([o] {
    ModelOptions f = o->m;
    f.precision = "fp32";
    BuiltModel fp = build_model(f);
    if (o->m.precision == "fp32") o->m.precision = "int8";
    BuiltModel q = build_model(o->m);
    // Below 8 bits, the same comparison against int8 too: what the narrower codes cost beyond int8's.
    const bool vs_int8 = parse_precision(o->m.precision).subbyte();
    BuiltModel i8;
    if (vs_int8) {
      ModelOptions m8 = o->m;
      m8.precision = "int8";
      i8 = build_model(m8);
    }
    double cos8_sum = 0, cos8_min = 1;
    int top1_8 = 0;
    std::vector<std::vector<Tensor>> inputs;
    if (!o->inputs.empty()) inputs = load_samples(o->inputs, fp.model->graph(), 1 << 30);
    else
      for (int i = 0; i < o->samples; ++i) inputs.push_back(synthetic_inputs(fp.model->graph(), 50000 + static_cast<uint64_t>(i)));

    const Graph& fg = fp.model->graph();
    const Graph& qg = q.model->graph();
    std::map<std::string, ValueId> fp_by_name;
    for (size_t v = 0; v < fg.values.size(); ++v) fp_by_name[fg.values[v].name] = static_cast<ValueId>(v);
    struct Acc {
      double signal = 0, noise = 0;
      std::string op;
    };
    std::map<std::string, Acc> layer;
    std::map<std::string, std::string> producer_op;
    for (const Node& n : qg.nodes)
      for (ValueId v : n.outputs)
        if (v != kNoValue) producer_op[qg.value(v).name] = n.op;
    double cos_sum = 0, l2_sum = 0, cos_min = 1;
    int top1 = 0, top5 = 0;
    for (auto& in : inputs) {
      std::map<std::string, Tensor> ref;
      auto fout = fp.model->run_observed(in, [&](ValueId v, const TensorView& t) {
        if (t.dtype == DType::f32) ref[fg.value(v).name] = Tensor(t.dtype, t.shape), std::memcpy(ref[fg.value(v).name].raw(), t.data, static_cast<size_t>(t.nbytes()));
      });
      auto qout = q.model->run_observed(in, [&](ValueId v, const TensorView& t) {
        const Value& val = qg.value(v);
        if (t.dtype != DType::u8 || !val.quant) return;
        auto it = ref.find(val.name);
        if (it == ref.end() || it->second.shape() != t.shape) return;
        Acc& a = layer[val.name];
        a.op = producer_op[val.name];
        const float* r = it->second.data<float>();
        for (int64_t i = 0; i < t.numel(); ++i) {
          double d = r[i] - dequant(t, *val.quant, i);
          a.signal += static_cast<double>(r[i]) * r[i];
          a.noise += d * d;
        }
      });
      OutputMetrics m = compare_outputs(fout[0], qout[0]);
      if (vs_int8) {
        OutputMetrics m8 = compare_outputs(i8.model->run(in)[0], qout[0]);
        cos8_sum += m8.cosine, cos8_min = std::min(cos8_min, m8.cosine), top1_8 += m8.top1;
      }
      cos_sum += m.cosine, l2_sum += m.rel_l2, cos_min = std::min(cos_min, m.cosine);
      top1 += m.top1, top5 += m.top5;
    }
    double n = static_cast<double>(inputs.size());
    std::printf("%s %s vs fp32 over %zu input(s): cosine mean %.5f (min %.5f)  rel L2 %.4f  top-1 agree %.1f%%  "
                "top-5 agree %.1f%%\n",
                o->m.model.c_str(), q.precision.c_str(), inputs.size(), cos_sum / n, cos_min, l2_sum / n,
                100.0 * top1 / n, 100.0 * top5 / n);
    if (vs_int8)
      std::printf("%s %s vs int8 over %zu input(s): cosine mean %.5f (min %.5f)  top-1 agree %.1f%%\n",
                  o->m.model.c_str(), q.precision.c_str(), inputs.size(), cos8_sum / n, cos8_min, 100.0 * top1_8 / n);
    // Said plainly where the numbers mean the model no longer works: below 0.9 cosine the top-1
    // class rarely survives (w2a2 and w1a1 post-training quantization land at 0.5-0.7).
    if (cos_sum / n < 0.9)
      std::printf("%s %s: accuracy destroyed (cosine %.2f against fp32, top-1 agreement %.0f%%): post-training "
                  "quantization to %s does not preserve this model; %s\n",
                  o->m.model.c_str(), q.precision.c_str(), cos_sum / n, 100.0 * top1 / n, q.precision.c_str(),
                  q.precision == "w1a1" ? "binary networks are trained binary (Bi-Real, XNOR-Net); use this build "
                                          "for speed studies"
                                        : "keep more layers at 8 bits (--keep-8bit) or use a wider precision");
    std::vector<std::pair<double, std::string>> rows;
    for (auto& [name, a] : layer)
      rows.push_back({a.noise > 0 ? 10 * std::log10(a.signal / a.noise) : 999.0, name});
    std::sort(rows.begin(), rows.end());
    std::printf("\nper-layer SQNR (dB, lowest first; quantized output vs fp32):\n");
    for (size_t i = 0; i < rows.size() && static_cast<int>(i) < o->layers; ++i)
      std::printf("  %7.2f  %-40s %s\n", rows[i].first, rows[i].second.c_str(), layer[rows[i].second].op.c_str());
  });
}

}  // namespace lowbit::cli
