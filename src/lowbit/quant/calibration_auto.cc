#include "lowbit/quant/calibration_auto.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>

#include "lowbit/common/log.h"
#include "lowbit/common/multiversion.h"
#include "lowbit/common/settings.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/kernels/reference/reference.h"
#include "lowbit/quant/patches.h"
#include "lowbit/runtime/thread_pool.h"

// The reader-error loops (row_dots: about 4 * 10^9 multiply-adds a candidate on ResNet-50) are
// compiled for AVX-512, AVX2 and baseline x86-64, one picked per CPU at load time
// (LOWBIT_MULTIVERSION, common/multiversion.h).

namespace lowbit {

Affine affine_coding(Range r, double steps) {
  float lo = std::min(0.f, r.lo), hi = std::max(0.f, r.hi);
  if (hi - lo < 1e-8f) hi = lo + 1e-8f;
  const double scale = (static_cast<double>(hi) - lo) / steps;
  return {scale, static_cast<int32_t>(std::clamp(std::nearbyint(-lo / scale), 0.0, steps))};
}

namespace {

// What a candidate range's coding error costs the readers of a value.
//
// The error is followed through the element-wise region the value feeds (ops of its shape whose
// other inputs are constants or the region's own values: a conv's Mul / Add affine, HardSwish
// written as x * Clip(x + 3, 0, 6) / 6, an activation), evaluated on the coded values, so that an
// error the region flattens (below HardSwish's -3) or scales counts as it comes out. Where it
// leaves the region, each reader measures it: a Conv or Gemm at its output, through its weights,
// on sampled input patches (noise W e against signal W x), so that a heavy channel, and errors
// that add up over a kernel's taps (clipping takes whole blobs of neighbouring values), count as
// they do there; any other reader (Add, pooling, a graph output) on the values themselves. Each
// reader's noise is relative to its signal, so readers of different scales add.
struct AutoReader {
  ValueId value = kNoValue;    // where it reads: the value or a value of its region
  const Node* node = nullptr;  // null: a reader of the values themselves
  PatchGeometry geo;
  std::vector<float> w;  // M x K (group g's rows are [g M / groups, (g + 1) M / groups))
  int64_t M = 0;
  double signal = 0;
  std::array<double, kCandidates> noise{};
  std::vector<float> patch;  // 1 + kCandidates rows of K: x, then each candidate's error
};

struct AutoValue {
  std::vector<const Node*> region;  // graph order
  std::vector<AutoReader> readers;
};

// Positions each Conv / Gemm reader samples over all the calibration inputs (ResNet-50, 256: about
// 4 * 10^9 multiply-adds per candidate, a few seconds).
constexpr int64_t kReaderPositions = 256;

bool elementwise_step(const Node& n) {
  static const std::set<std::string_view> arithmetic{"Add", "Sub", "Mul", "Div", "Max", "Min"};
  return n.outputs.size() == 1 && (elementwise_map(n.op) || arithmetic.count(n.op)) && find_reference(n.op);
}

AutoReader make_reader(const Graph& g, ValueId v, const Node* n, size_t input) {
  AutoReader a;
  a.value = v;
  if (!n || input != 0) return a;
  const Tensor* wt = n->inputs.size() > 1 ? g.constant(n->inputs[1]) : nullptr;
  if (!wt || wt->dtype() != DType::f32) return a;
  const bool conv = n->op == "Conv" && g.value(v).shape.size() == 4 && wt->shape().size() == 4;
  const bool gemm =
      n->op == "Gemm" && g.value(v).shape.size() == 2 && wt->shape().size() == 2 && n->attrs.get_int("transA", 0) == 0;
  if (!conv && !gemm) return a;
  a.geo = patch_geometry(g, *n);
  const int64_t K = a.geo.K();
  a.M = wt->shape()[0];
  a.w.assign(wt->data<float>(), wt->data<float>() + wt->numel());
  if (gemm && n->attrs.get_int("transB", 0) == 0) {  // [K, N] -> [N, K]
    a.M = wt->shape()[1];
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < a.M; ++j) a.w[static_cast<size_t>(j * K + k)] = wt->data<float>()[k * a.M + j];
  }
  if (a.M * K != wt->numel() || a.geo.groups <= 0 || a.M % a.geo.groups) {
    a.w.clear();
    return a;
  }
  a.node = n;
  a.patch.assign(static_cast<size_t>((1 + kCandidates) * K), 0.0f);
  return a;
}

// Per value: whether a quantized graph can hold its codes, as the quantizer rewrites (quant/quantize.cc):
// a Conv / Gemm codes its input, residual and output; an Add or Mul of two activations, an
// element-wise map or an op that moves codes, its values when an input is coded already. Values
// only between fp32 ops (a Mul by a constant, HardSwish written out as Add, Clip and Div) are not
// measured: their ranges are never used, and a detector's graph has hundreds of them.
std::vector<char> codable_values(const Graph& g) {
  std::vector<char> coded(g.values.size(), 0);
  auto mark = [&](ValueId v) {
    if (v != kNoValue && !g.is_constant(v)) coded[static_cast<size_t>(v)] = 1;
  };
  auto is = [&](ValueId v) { return v != kNoValue && coded[static_cast<size_t>(v)]; };
  for (const Node& n : g.nodes) {
    if (n.inputs.empty() || n.outputs.empty()) continue;
    if (n.op == "Conv" || n.op == "Gemm" || n.op == "BinaryConv") {
      mark(n.inputs[0]);
      mark(Graph::input_or_none(n, 3));
      mark(n.outputs[0]);
      continue;
    }
    bool two = n.inputs.size() == 2 && (n.op == "Add" || n.op == "Mul");
    for (ValueId i : n.inputs) two &= i != kNoValue && !g.is_constant(i);
    if (two && (is(n.inputs[0]) || is(n.inputs[1]))) {
      mark(n.inputs[0]), mark(n.inputs[1]), mark(n.outputs[0]);
    } else if ((elementwise_map(n.op) || quant_passthrough(n.op) != QuantPassthrough::no) && is(n.inputs[0])) {
      for (ValueId o : n.outputs) mark(o);  // Split: every part
    }
  }
  return coded;
}

AutoValue automatic_value(const Graph& g, ValueId v) {
  AutoValue a;
  const Shape& shape = g.value(v).shape;
  std::set<ValueId> inside{v};
  for (const Node& n : g.nodes) {
    bool reads = false, closed = true;
    for (ValueId i : n.inputs) {
      if (i == kNoValue || g.is_constant(i)) continue;
      reads |= inside.count(i) > 0;
      closed &= inside.count(i) > 0;
    }
    if (!reads || !closed || !elementwise_step(n) || n.outputs[0] == kNoValue) continue;
    const Value& out = g.value(n.outputs[0]);
    if (out.dtype != DType::f32 || out.shape != shape) continue;
    a.region.push_back(&n);
    inside.insert(n.outputs[0]);
  }
  std::set<const Node*> in_region(a.region.begin(), a.region.end());
  for (const Node& n : g.nodes) {
    if (in_region.count(&n)) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] != kNoValue && inside.count(n.inputs[i])) a.readers.push_back(make_reader(g, n.inputs[i], &n, i));
  }
  for (ValueId o : g.outputs)
    if (inside.count(o)) a.readers.push_back(make_reader(g, o, nullptr, 0));
  return a;
}

// A range's coding, to code and decode floats the way QuantizeLinear / DequantizeLinear will.
struct Coding {
  float scale = 1, inv = 1, zp = 0, top = 255;
  Coding() = default;
  Coding(Range r, int steps) {
    const Affine a = affine_coding(r, steps);
    scale = static_cast<float>(a.scale), inv = static_cast<float>(1.0 / a.scale);
    zp = static_cast<float>(a.zero_point), top = static_cast<float>(steps);
  }
  float decoded(float x) const {
    constexpr float magic = 12582912.0f;  // 1.5 * 2^23: rounds [0, 2^22) to nearest without a libm call
    const float code = std::min(std::max(x * inv + zp, 0.0f), top);
    return (((code + magic) - magic) - zp) * scale;
  }
};

// out[0] = w . x, out[1 + k] = w . e_k for one weight row over a patch and its candidates' errors
// (rows of K in `p`).
LOWBIT_MULTIVERSION
void row_dots(const float* w, const float* p, int64_t K, float* out) {
  float acc[1 + kCandidates] = {};
  for (int64_t k = 0; k < K; ++k)
    for (size_t j = 0; j <= kCandidates; ++j) acc[j] += w[k] * p[static_cast<int64_t>(j) * K + k];
  for (size_t j = 0; j <= kCandidates; ++j) out[j] = acc[j];
}

// sum of x[i]^2, and of (a[i] - b[i])^2: eight float lanes (which the compiler keeps in vectors,
// without -ffast-math), added into a double every 4096 values.
LOWBIT_MULTIVERSION
double sum_squares(const float* a, const float* b, int64_t n) {
  double total = 0;
  for (int64_t i0 = 0; i0 < n; i0 += 4096) {
    const int64_t i1 = std::min(n, i0 + 4096);
    float acc[8] = {};
    int64_t i = i0;
    for (; i + 8 <= i1; i += 8)
      for (int j = 0; j < 8; ++j) {
        const float d = b ? a[i + j] - b[i + j] : a[i + j];
        acc[j] += d * d;
      }
    for (; i < i1; ++i) {
      const float d = b ? a[i] - b[i] : a[i];
      acc[0] += d * d;
    }
    for (float x : acc) total += x;
  }
  return total;
}

LOWBIT_MULTIVERSION
void decode_all(const Coding& c, const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = c.decoded(x[i]);
}

// A Conv / Gemm reader's signal and noise from the values it reads (x) and each candidate's error there.
void measure(AutoReader& r, const Tensor& x, const std::array<Tensor, kCandidates>& err, int64_t per_sample,
             int64_t sample, ThreadPool& pool) {
  const float* xd = x.data<float>();
  const PatchGeometry& p = r.geo;
  const int64_t total = x.shape().at(0) * p.OH * p.OW, take = std::min(per_sample, total), K = p.K();
  const int64_t Mg = r.M / p.groups;
  constexpr int64_t kChunk = 16;  // rows per task; the sums are added in task order (any thread count)
  constexpr int64_t kParallelWork = 16384;  // multiply-adds a patch (x 5) below which one thread does it
  const int64_t chunks = (Mg + kChunk - 1) / kChunk;
  std::vector<double> part(static_cast<size_t>(chunks * static_cast<int64_t>(1 + kCandidates)));
  for (int64_t i = 0; i < take; ++i) {
    const int64_t pos = sampled_position(i, take, total, sample);
    for (int64_t g = 0; g < p.groups; ++g) {
      float* px = r.patch.data();
      extract_patch(p, xd, pos, g, px);
      for (size_t k = 0; k < kCandidates; ++k) extract_patch(p, err[k].data<float>(), pos, g, px + (1 + k) * K);
      std::fill(part.begin(), part.end(), 0.0);
      auto rows = [&](int64_t c, int) {
        double* out = part.data() + c * static_cast<int64_t>(1 + kCandidates);
        float d[1 + kCandidates];
        for (int64_t m = c * kChunk; m < std::min(Mg, (c + 1) * kChunk); ++m) {
          row_dots(r.w.data() + (g * Mg + m) * K, px, K, d);
          for (size_t j = 0; j <= kCandidates; ++j) out[j] += double(d[j]) * d[j];
        }
      };
      if (Mg * K >= kParallelWork) pool.parallel_for(chunks, rows);
      else for (int64_t c = 0; c < chunks; ++c) rows(c, 0);  // a depthwise group: less work than a fork
      for (int64_t c = 0; c < chunks; ++c) {
        const double* out = part.data() + c * static_cast<int64_t>(1 + kCandidates);
        r.signal += out[0];
        for (size_t k = 0; k < kCandidates; ++k) r.noise[k] += out[1 + k];
      }
    }
  }
}

// The region's values computed from `x` as value v (graph values by id, v included).
std::map<ValueId, Tensor> run_region(const Graph& g, const AutoValue& a, ValueId v, Tensor x) {
  std::map<ValueId, Tensor> vals;
  vals[v] = std::move(x);
  for (const Node* n : a.region) {
    std::vector<const Tensor*> in;
    for (ValueId i : n->inputs) in.push_back(i == kNoValue ? nullptr : g.is_constant(i) ? g.constant(i) : &vals.at(i));
    vals[n->outputs[0]] = std::move(evaluate_reference(g, *n, in)[0]);
  }
  return vals;
}

// Adds one sample of value v (`t`) to its readers' measures for the candidate codings.
void measure_value(const Graph& g, AutoValue& a, ValueId v, const TensorView& t, const std::array<Coding, kCandidates>& codings,
                   int64_t per_sample, int64_t sample, ThreadPool& pool) {
  Tensor x(DType::f32, t.shape);
  std::copy(t.as<float>(), t.as<float>() + t.numel(), x.data<float>());
  const std::map<ValueId, Tensor> exact = run_region(g, a, v, x);
  std::array<std::map<ValueId, Tensor>, kCandidates> coded;
  for (size_t k = 0; k < kCandidates; ++k) {
    Tensor q(DType::f32, t.shape);
    decode_all(codings[k], x.data<float>(), q.data<float>(), t.numel());
    coded[k] = run_region(g, a, v, std::move(q));
  }
  std::map<ValueId, std::array<Tensor, kCandidates>> errors;  // per value a Conv / Gemm reader reads
  for (AutoReader& r : a.readers) {
    const Tensor& ex = exact.at(r.value);
    if (!r.node) {  // the values themselves: no error tensor needed
      r.signal += sum_squares(ex.data<float>(), nullptr, ex.numel());
      for (size_t k = 0; k < kCandidates; ++k)
        r.noise[k] += sum_squares(coded[k].at(r.value).data<float>(), ex.data<float>(), ex.numel());
      continue;
    }
    auto [it, fresh] = errors.try_emplace(r.value);
    if (fresh)
      for (size_t k = 0; k < kCandidates; ++k) {
        it->second[k] = Tensor(DType::f32, ex.shape());
        const float *c = coded[k].at(r.value).data<float>(), *e = ex.data<float>();
        float* d = it->second[k].data<float>();
        for (int64_t i = 0; i < ex.numel(); ++i) d[i] = c[i] - e[i];
      }
    measure(r, ex, it->second, per_sample, sample, pool);
  }
}

}  // namespace

std::map<size_t, size_t> choose_candidates(CompiledModel& model, const std::vector<std::vector<Tensor>>& samples,
                                           const std::map<size_t, std::array<Range, kCandidates>>& candidates,
                                           const std::function<int(size_t)>& steps_of,
                                           const std::function<void()>& sample_done) {
  const Graph& g = model.graph();
  std::map<size_t, AutoValue> autos;
  const std::vector<char> codable = codable_values(g);
  for (auto& [v, c] : candidates)  // what no quantized op codes keeps minmax's range
    if (codable[v]) autos[v] = automatic_value(g, static_cast<ValueId>(v));
  ThreadPool pool(0);
  const int64_t per_sample = (kReaderPositions + static_cast<int64_t>(samples.size()) - 1) / static_cast<int64_t>(samples.size());
  for (size_t si = 0; si < samples.size(); ++si) {
    model.run_observed(samples[si], [&](ValueId id, const TensorView& t) {
      const size_t v = static_cast<size_t>(id);
      auto it = candidates.find(v);
      if (t.dtype != DType::f32 || !autos.count(v) || t.numel() == 0) return;
      std::array<Coding, kCandidates> codings;
      for (size_t k = 0; k < kCandidates; ++k) codings[k] = Coding(it->second[k], steps_of(v));
      measure_value(g, autos[v], id, t, codings, per_sample, static_cast<int64_t>(si), pool);
    });
    if (sample_done) sample_done();
  }
  std::map<size_t, size_t> chosen;
  for (auto& [v, a] : autos) {
    const std::array<Range, kCandidates>& c = candidates.at(v);
    std::array<double, kCandidates> score{};
    for (const AutoReader& r : a.readers)
      for (size_t k = 0; k < kCandidates; ++k) score[k] += r.noise[k] / std::max(r.signal, 1e-30);
    size_t best = 0;
    for (size_t k = 1; k < kCandidates; ++k)
      if (score[k] < score[best]) best = k;
    if (verbose("calibration")) {
      std::string line = "lowbit <calibration> " + g.value(static_cast<ValueId>(v)).name + ":";
      char buf[96];
      for (size_t k = 0; k < kCandidates; ++k) {
        std::snprintf(buf, sizeof buf, " %s [%.4g, %.4g] %.3e%s", calibration_method_name(c[k].method), c[k].lo, c[k].hi,
                      score[k], k == best ? " (chosen)" : "");
        line += buf;
      }
      log_message(LogLevel::trace, line);
    }
    chosen[v] = best;
  }
  return chosen;
}

}  // namespace lowbit
