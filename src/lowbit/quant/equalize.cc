#include "lowbit/quant/equalize.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/common/multiversion.h"
#include "lowbit/common/settings.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/ir/codes.h"
#include "lowbit/quant/calibration_auto.h"
#include "lowbit/quant/patches.h"
#include "lowbit/runtime/thread_pool.h"

// The readers' error loops (quantized weights times coded patches: about 3 * 10^9 multiply-adds
// a candidate on ResNet-18) are compiled for AVX-512, AVX2 and baseline x86-64 (LOWBIT_MULTIVERSION,
// common/multiversion.h).

namespace lowbit {
namespace {

constexpr int64_t kPositions = 256;  // sampled output positions per reader, over all the samples
constexpr double kAlphas[] = {0.25, 0.5, 0.75};
constexpr double kMinGain = 0.01;  // applied only if the readers' error drops by at least 1%
constexpr double kMaxScale = 256;  // s_c within [1 / 256, 256]: far past any range ratio that pays

struct Reader {
  NodeId node = -1;
  PatchGeometry geo;
  const Tensor* w = nullptr;  // [M, C / groups, KH, KW]
  int64_t M = 0, K = 0;
  DType code = DType::i8;
  std::vector<float> patches;  // taken x groups x K
  std::vector<float> y;        // taken x M: the fp32 output at each patch (W x)
  int64_t taken = 0;
};

struct Pair {
  NodeId producer = -1;
  ValueId v = kNoValue;
  int64_t C = 0;
  std::vector<Reader> readers;
  std::vector<float> lo, hi;  // per channel of v, over the samples
  bool seen = false;
};

bool only_reader(const Graph& g, ValueId constant, NodeId node) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId in : g.nodes[i].inputs)
      if (in == constant && static_cast<NodeId>(i) != node) return false;
  return true;
}

// Conv (no residual, no activation but ReLU) -> v -> Convs only, each reading v as its input,
// quantized at a width with codes (not binary, not fp32), weights not shared with another node.
std::vector<Pair> find_pairs(const Graph& g, const QuantizeOptions& opts) {
  std::set<std::string> kept;
  for (auto& [node, why] : nodes_kept_8bit(g, opts)) kept.insert(node);
  auto quantized_conv = [&](const Node& n) {
    if (n.op != "Conv" || n.inputs.size() < 2 || opts.keep_fp32.count(n.name)) return false;
    const Tensor* w = g.constant(n.inputs[1]);
    const Precision p = node_precision(n.name, opts, kept);
    return w && w->dtype() == DType::f32 && w->shape().size() == 4 && p.quantized() && p.weight != DType::b1;
  };
  std::vector<std::vector<std::pair<NodeId, size_t>>> readers(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (size_t k = 0; k < g.nodes[i].inputs.size(); ++k)
      if (ValueId in = g.nodes[i].inputs[k]; in != kNoValue) readers[static_cast<size_t>(in)].push_back({static_cast<NodeId>(i), k});
  std::set<ValueId> outputs(g.outputs.begin(), g.outputs.end());
  std::vector<Pair> pairs;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!quantized_conv(n) || Graph::input_or_none(n, 3) != kNoValue || n.attrs.has("post_op") || n.attrs.has("act_max"))
      continue;
    if (n.attrs.has("act_min") && n.attrs.get_float("act_min", 0.0f) != 0.0f) continue;  // ReLU or nothing
    const ValueId b = Graph::input_or_none(n, 2);
    if ((b != kNoValue && (!g.is_constant(b) || !only_reader(g, b, static_cast<NodeId>(i)))) ||
        !only_reader(g, n.inputs[1], static_cast<NodeId>(i)))
      continue;
    const ValueId v = n.outputs[0];
    const Shape& vs = g.value(v).shape;
    if (outputs.count(v) || vs.size() != 4 || readers[static_cast<size_t>(v)].empty()) continue;
    Pair p;
    p.producer = static_cast<NodeId>(i), p.v = v, p.C = vs[1];
    bool ok = g.constant(n.inputs[1])->shape()[0] == p.C;
    for (auto [r, k] : readers[static_cast<size_t>(v)]) {
      const Node& rn = g.nodes[static_cast<size_t>(r)];
      ok &= k == 0 && quantized_conv(rn) && only_reader(g, rn.inputs[1], r) && g.value(rn.inputs[0]).shape == vs;
      if (!ok) break;
      Reader rd;
      rd.node = r;
      rd.geo = patch_geometry(g, rn);
      rd.w = g.constant(rn.inputs[1]);
      rd.M = rd.w->shape()[0], rd.K = rd.geo.K();
      rd.code = node_precision(rn.name, opts, kept).weight;
      ok &= rd.geo.groups > 0 && rd.geo.C == p.C && rd.M % rd.geo.groups == 0 && rd.M * rd.K == rd.w->numel();
      p.readers.push_back(std::move(rd));
    }
    if (ok) pairs.push_back(std::move(p));
  }
  return pairs;
}

// Channel of patch element k of group `group` (the weights' [C / groups, KH, KW] order).
int64_t channel_of(const PatchGeometry& p, int64_t group, int64_t k) { return group * (p.C / p.groups) + k / (p.KH * p.KW); }

LOWBIT_MULTIVERSION
float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  for (; i < n; ++i) acc[0] += a[i] * b[i];
  float s = 0;
  for (float x : acc) s += x;
  return s;
}

// The reader's relative output error (sum |Wq Q(x / s) - W x|^2 over sum |W x|^2) with its input
// channels scaled by 1 / s and its weights by s, coded as the quantized graph will code them.
double reader_error(const Reader& r, const std::vector<double>& s, Range act, int act_steps, ThreadPool& pool) {
  const PatchGeometry& p = r.geo;
  const int64_t M = r.M, K = r.K, Mg = M / p.groups, taps = p.KH * p.KW;
  // The weights times s, coded per output channel (the rule quantize_weights applies below 8 bits too).
  Tensor ws = r.w->clone();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) ws.data<float>()[m * K + k] *= static_cast<float>(s[static_cast<size_t>(channel_of(p, m / Mg, k))]);
  QuantParams q;
  const Tensor codes = quantize_weights(ws, r.code, WeightScale::automatic, DType::i8, q);
  std::vector<float> wq(static_cast<size_t>(M * K));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k)
      wq[static_cast<size_t>(m * K + k)] = static_cast<float>(load_code(codes.raw(), DType::i8, m * K + k)) * q.scale[static_cast<size_t>(m)];
  const Affine a = affine_coding(act, act_steps);
  const float scale = static_cast<float>(a.scale), inv = static_cast<float>(1.0 / a.scale),
              zp = static_cast<float>(a.zero_point), top = static_cast<float>(act_steps);
  std::vector<float> inv_s(static_cast<size_t>(p.C));
  for (int64_t c = 0; c < p.C; ++c) inv_s[static_cast<size_t>(c)] = static_cast<float>(1.0 / s[static_cast<size_t>(c)]);
  std::vector<double> noise(static_cast<size_t>(r.taken), 0.0), signal(static_cast<size_t>(r.taken), 0.0);
  pool.parallel_for(r.taken, [&](int64_t i, int) {
    std::vector<float> xq(static_cast<size_t>(K));
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* x = r.patches.data() + (i * p.groups + g) * K;
      for (int64_t k = 0; k < K; ++k) {
        constexpr float magic = 12582912.0f;  // 1.5 * 2^23: rounds [0, 2^22) to nearest
        const float code = std::min(std::max(x[k] * inv_s[static_cast<size_t>(g * (p.C / p.groups) + k / taps)] * inv + zp, 0.0f), top);
        xq[static_cast<size_t>(k)] = (((code + magic) - magic) - zp) * scale;
      }
      for (int64_t m = g * Mg; m < (g + 1) * Mg; ++m) {
        const double y = r.y[static_cast<size_t>(i * M + m)], d = dot(wq.data() + m * K, xq.data(), K) - y;
        noise[static_cast<size_t>(i)] += d * d;
        signal[static_cast<size_t>(i)] += y * y;
      }
    }
  });
  double n = 0, sg = 0;
  for (int64_t i = 0; i < r.taken; ++i) n += noise[static_cast<size_t>(i)], sg += signal[static_cast<size_t>(i)];
  return n / std::max(sg, 1e-30);
}

// s_c = r_x^a / r_w^(1 - a), normalised to a geometric mean of 1 over the channels that have both.
std::vector<double> scales(const Pair& p, double alpha) {
  std::vector<double> rw(static_cast<size_t>(p.C), 0.0), s(static_cast<size_t>(p.C), 1.0);
  for (const Reader& r : p.readers) {
    const int64_t Mg = r.M / r.geo.groups;
    for (int64_t m = 0; m < r.M; ++m)
      for (int64_t k = 0; k < r.K; ++k) {
        double& w = rw[static_cast<size_t>(channel_of(r.geo, m / Mg, k))];
        w = std::max(w, static_cast<double>(std::fabs(r.w->data<float>()[m * r.K + k])));
      }
  }
  double log_sum = 0;
  int n = 0;
  for (int64_t c = 0; c < p.C; ++c) {
    const double rx = std::max(std::fabs(p.lo[static_cast<size_t>(c)]), std::fabs(p.hi[static_cast<size_t>(c)]));
    if (!(rx > 0) || !(rw[static_cast<size_t>(c)] > 0)) continue;
    s[static_cast<size_t>(c)] = std::pow(rx, alpha) / std::pow(rw[static_cast<size_t>(c)], 1 - alpha);
    log_sum += std::log(s[static_cast<size_t>(c)]), ++n;
  }
  const double mean = n ? std::exp(log_sum / n) : 1.0;
  for (int64_t c = 0; c < p.C; ++c) {
    const double rx = std::max(std::fabs(p.lo[static_cast<size_t>(c)]), std::fabs(p.hi[static_cast<size_t>(c)]));
    double& x = s[static_cast<size_t>(c)];
    x = rx > 0 && rw[static_cast<size_t>(c)] > 0 ? std::clamp(x / mean, 1 / kMaxScale, kMaxScale) : 1.0;
  }
  return s;
}

// v's per-tensor range once its channels are divided by s, as calibration would choose it: minmax
// of the scaled channel ranges, or, where calibration clips (sub-byte codes, or a method other
// than minmax), the same shrink of both ends that mse searches, scored on the sampled patches'
// values. Equalized channels change where clipping pays, so the range must be the one the codes
// will have: measured with minmax ranges, w4a4 ResNet-18 chose pairs that lost end to end.
Range scaled_range(const Pair& p, const std::vector<double>& s, int steps, bool clips) {
  Range r{0, 0, true};
  for (int64_t c = 0; c < p.C; ++c) {
    r.lo = std::min(r.lo, static_cast<float>(p.lo[static_cast<size_t>(c)] / s[static_cast<size_t>(c)]));
    r.hi = std::max(r.hi, static_cast<float>(p.hi[static_cast<size_t>(c)] / s[static_cast<size_t>(c)]));
  }
  if (!clips) return r;
  const Reader& rd = p.readers[0];
  const int64_t K = rd.K, taps = rd.geo.KH * rd.geo.KW, Cg = rd.geo.C / rd.geo.groups;
  std::vector<float> x(rd.patches.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t k = static_cast<int64_t>(i) % K, g = static_cast<int64_t>(i) / K % rd.geo.groups;
    x[i] = static_cast<float>(rd.patches[i] / s[static_cast<size_t>(g * Cg + k / taps)]);
  }
  Range best = r;
  double best_err = -1;
  for (int i = 0; i <= 90; ++i) {  // as calibration's mse: both ends times 1.00, 0.99, ..., 0.10
    const float a = 1.0f - 0.01f * static_cast<float>(i);
    const Range c{r.lo * a, r.hi * a, true};
    const Affine af = affine_coding(c, steps);
    const float scale = static_cast<float>(af.scale), inv = static_cast<float>(1.0 / af.scale),
                zp = static_cast<float>(af.zero_point), top = static_cast<float>(steps);
    double err = 0;
    for (float v : x) {
      constexpr float magic = 12582912.0f;
      const float code = std::min(std::max(v * inv + zp, 0.0f), top);
      const float d = v - (((code + magic) - magic) - zp) * scale;
      err += double(d) * d;
    }
    if (best_err < 0 || err < best_err) best_err = err, best = c;
  }
  return best;
}

}  // namespace

std::vector<EqualizedPair> equalize_layers(CompiledModel& fp32, const std::vector<std::vector<Tensor>>& samples,
                                           const QuantizeOptions& opts, Graph& g) {
  std::vector<Pair> pairs = find_pairs(g, opts);
  std::vector<EqualizedPair> out;
  if (pairs.empty()) return out;
  if (samples.empty()) throw Error("equalization needs calibration samples");
  const std::vector<DType> widths = activation_widths(g, opts);
  std::map<ValueId, Pair*> by_value;
  for (Pair& p : pairs) by_value[p.v] = &p;
  const int64_t per_sample = (kPositions + static_cast<int64_t>(samples.size()) - 1) / static_cast<int64_t>(samples.size());
  for (size_t si = 0; si < samples.size(); ++si)
    fp32.run_observed(samples[si], [&](ValueId v, const TensorView& t) {
      auto it = by_value.find(v);
      if (it == by_value.end() || t.dtype != DType::f32) return;
      Pair& p = *it->second;
      const float* x = t.as<float>();
      const int64_t N = t.shape[0], plane = t.shape[2] * t.shape[3];
      if (!p.seen) p.lo.assign(static_cast<size_t>(p.C), x[0]), p.hi.assign(static_cast<size_t>(p.C), x[0]), p.seen = true;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < p.C; ++c) {
          const float* xc = x + (n * p.C + c) * plane;
          const auto [lo, hi] = std::minmax_element(xc, xc + plane);
          p.lo[static_cast<size_t>(c)] = std::min(p.lo[static_cast<size_t>(c)], *lo);
          p.hi[static_cast<size_t>(c)] = std::max(p.hi[static_cast<size_t>(c)], *hi);
        }
      for (Reader& r : p.readers) {
        const int64_t total = N * r.geo.OH * r.geo.OW, take = std::min(per_sample, total);
        for (int64_t i = 0; i < take; ++i) {
          const int64_t pos = sampled_position(i, take, total, static_cast<int64_t>(si));
          const size_t at = r.patches.size();
          r.patches.resize(at + static_cast<size_t>(r.geo.groups * r.K));
          for (int64_t gi = 0; gi < r.geo.groups; ++gi) extract_patch(r.geo, x, pos, gi, r.patches.data() + at + gi * r.K);
        }
        r.taken += take;
      }
    });
  ThreadPool pool(0);
  for (Pair& p : pairs) {
    if (!p.seen) continue;
    EqualizedPair e;
    e.producer = g.nodes[static_cast<size_t>(p.producer)].name;
    for (Reader& r : p.readers) {
      e.readers.push_back(g.nodes[static_cast<size_t>(r.node)].name);
      const int64_t Mg = r.M / r.geo.groups;
      r.y.assign(static_cast<size_t>(r.taken * r.M), 0.0f);
      for (int64_t i = 0; i < r.taken; ++i)
        for (int64_t m = 0; m < r.M; ++m)
          r.y[static_cast<size_t>(i * r.M + m)] =
              dot(r.w->data<float>() + m * r.K, r.patches.data() + (i * r.geo.groups + m / Mg) * r.K, r.K);
    }
    const int steps = static_cast<int>(dtype_info(widths[static_cast<size_t>(p.v)]).qmax);
    const bool clips = steps < 255 || opts.method != CalibrationMethod::minmax;
    auto error = [&](const std::vector<double>& s) {
      const Range act = scaled_range(p, s, steps, clips);
      double sum = 0;
      for (const Reader& r : p.readers) sum += reader_error(r, s, act, steps, pool);
      return sum;
    };
    e.error_before = e.error_after = error(std::vector<double>(static_cast<size_t>(p.C), 1.0));
    std::vector<double> best;
    for (double a : kAlphas) {
      std::vector<double> s = scales(p, a);
      const double err = error(s);
      if (err < e.error_after) e.error_after = err, e.alpha = a, best = std::move(s);
    }
    if (e.error_after > e.error_before * (1 - kMinGain)) e.alpha = 0, e.error_after = e.error_before, best.clear();
    if (verbose("equalize"))
      log_message(LogLevel::trace, "lowbit <equalize> " + e.producer + " -> " + std::to_string(e.readers.size()) +
                                       " reader(s): error " + std::to_string(e.error_before) + " -> " +
                                       std::to_string(e.error_after) +
                                       (e.applied() ? " (alpha " + std::to_string(e.alpha) + ")" : " (left as it was)"));
    if (e.applied()) {
      // The producer's output channel c (its weights' row and its bias) divided by s_c; each
      // reader's weights that read channel c multiplied by it. New tensors: constants share bytes.
      Node& pn = g.nodes[static_cast<size_t>(p.producer)];
      Tensor wp = g.constant(pn.inputs[1])->clone();
      const int64_t per = wp.numel() / p.C;
      for (int64_t c = 0; c < p.C; ++c)
        for (int64_t k = 0; k < per; ++k) wp.data<float>()[c * per + k] /= static_cast<float>(best[static_cast<size_t>(c)]);
      g.value(pn.inputs[1]).constant = std::move(wp);
      if (ValueId b = Graph::input_or_none(pn, 2); b != kNoValue) {
        Tensor bias = g.constant(b)->clone();
        for (int64_t c = 0; c < bias.numel() && c < p.C; ++c) bias.data<float>()[c] /= static_cast<float>(best[static_cast<size_t>(c)]);
        g.value(b).constant = std::move(bias);
      }
      for (const Reader& r : p.readers) {
        Node& rn = g.nodes[static_cast<size_t>(r.node)];
        Tensor w = r.w->clone();
        const int64_t Mg = r.M / r.geo.groups;
        for (int64_t m = 0; m < r.M; ++m)
          for (int64_t k = 0; k < r.K; ++k)
            w.data<float>()[m * r.K + k] *= static_cast<float>(best[static_cast<size_t>(channel_of(r.geo, m / Mg, k))]);
        g.value(rn.inputs[1]).constant = std::move(w);
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::string describe_equalization(const std::vector<EqualizedPair>& pairs) {
  int applied = 0;
  double before = 0, after = 0;
  for (const EqualizedPair& p : pairs)
    if (p.applied()) ++applied, before += p.error_before, after += p.error_after;
  char buf[160];
  if (!applied) {
    std::snprintf(buf, sizeof buf, "equalize: none of %zu conv pair(s) rescaled (no scaling lowered the readers' error by 1%%)",
                  pairs.size());
    return buf;
  }
  std::snprintf(buf, sizeof buf, "equalize: %d of %zu conv pair(s) rescaled, their readers' error %.3g -> %.3g (mean)", applied,
                pairs.size(), before / applied, after / applied);
  return buf;
}

}  // namespace lowbit
