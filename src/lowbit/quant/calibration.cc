#include "lowbit/quant/calibration.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "lowbit/common/error.h"
#include "lowbit/quant/calibration_auto.h"

namespace lowbit {
namespace {

constexpr int kBins = 2048;

struct Histogram {
  std::vector<double> count = std::vector<double>(kBins, 0.0);
  double total = 0;
};

// Sum of squared error of encoding the histogram's mass with steps + 1 levels over [lo, hi]
// (values outside are clipped to the nearest end).
double quant_mse(const Histogram& h, float min, float max, float lo, float hi, int steps) {
  double width = (static_cast<double>(max) - min) / kBins, step = (static_cast<double>(hi) - lo) / steps;
  if (step <= 0) return 1e300;
  double err = 0;
  for (int b = 0; b < kBins; ++b) {
    if (!h.count[b]) continue;
    double x = min + (b + 0.5) * width;
    double q = std::clamp(std::nearbyint((x - lo) / step), 0.0, double(steps)) * step + lo;
    err += h.count[b] * (x - q) * (x - q);
  }
  return err;
}

// KL divergence between the histogram P and its (steps + 1)-level quantized version Q over [lo, hi]
// (clipped mass folded into the edge bins of P, as TensorRT's entropy calibrator does).
double quant_kl(const Histogram& h, float min, float max, float lo, float hi, int steps) {
  double width = (static_cast<double>(max) - min) / kBins;
  int b0 = std::clamp(static_cast<int>((lo - min) / width), 0, kBins - 1);
  int b1 = std::clamp(static_cast<int>(std::ceil((hi - min) / width)), b0 + 1, kBins);
  int n = b1 - b0;
  std::vector<double> p(static_cast<size_t>(n), 0.0);
  for (int b = 0; b < kBins; ++b) p[static_cast<size_t>(std::clamp(b - b0, 0, n - 1))] += h.count[b];
  // Q: merge P's bins into steps + 1 groups, spread each group's mass evenly over its non-empty bins.
  std::vector<double> q(static_cast<size_t>(n), 0.0);
  int levels = std::min(steps + 1, n);
  for (int g = 0; g < levels; ++g) {
    int s = g * n / levels, e = (g + 1) * n / levels;
    double mass = 0;
    int nonzero = 0;
    for (int i = s; i < e; ++i) mass += p[static_cast<size_t>(i)], nonzero += p[static_cast<size_t>(i)] > 0;
    for (int i = s; i < e; ++i)
      if (p[static_cast<size_t>(i)] > 0) q[static_cast<size_t>(i)] = mass / nonzero;
  }
  double kl = 0, ptot = 0, qtot = 0;
  for (int i = 0; i < n; ++i) ptot += p[static_cast<size_t>(i)], qtot += q[static_cast<size_t>(i)];
  for (int i = 0; i < n; ++i) {
    double pi = p[static_cast<size_t>(i)] / ptot, qi = q[static_cast<size_t>(i)] / qtot;
    if (pi > 0) kl += pi * std::log(pi / std::max(qi, 1e-12));
  }
  return kl;
}

Range choose_range(const Histogram& h, float min, float max, CalibrationMethod method, int steps) {
  if (method == CalibrationMethod::percentile) {
    // Drop 0.01% of the mass on each side.
    double cut = h.total * 1e-4, acc = 0;
    double width = (static_cast<double>(max) - min) / kBins;
    int lo_b = 0, hi_b = kBins - 1;
    for (acc = 0; lo_b < kBins - 1 && acc + h.count[lo_b] <= cut; ++lo_b) acc += h.count[lo_b];
    for (acc = 0; hi_b > lo_b && acc + h.count[hi_b] <= cut; --hi_b) acc += h.count[hi_b];
    return {static_cast<float>(min + lo_b * width), static_cast<float>(min + (hi_b + 1) * width), true};
  }
  // mse / entropy: shrink both ends by the same factor, keep the best.
  Range best{min, max, true};
  double best_score = 1e300;
  // Fewer levels clip harder: 4-bit activations are best clipped at 30-60% of their maximum.
  const int shrink_steps = steps >= 255 ? 70 : 90;
  for (int i = 0; i <= shrink_steps; ++i) {
    float alpha = 1.0f - 0.01f * static_cast<float>(i);
    float lo = std::min(0.f, min * alpha), hi = std::max(0.f, max * alpha);
    double score = method == CalibrationMethod::mse ? quant_mse(h, min, max, lo, hi, steps)
                                                    : quant_kl(h, min, max, lo, hi, steps);
    if (score < best_score) best_score = score, best = {lo, hi, true};
  }
  return best;
}

}  // namespace

CalibrationMethod parse_calibration_method(const std::string& name) {
  if (name == "minmax") return CalibrationMethod::minmax;
  if (name == "percentile") return CalibrationMethod::percentile;
  if (name == "entropy") return CalibrationMethod::entropy;
  if (name == "mse") return CalibrationMethod::mse;
  if (name == "auto") return CalibrationMethod::automatic;
  throw Error("unknown calibration method '" + name + "' (minmax, percentile, entropy, mse, auto)");
}

const char* calibration_method_name(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::minmax: return "minmax";
    case CalibrationMethod::percentile: return "percentile";
    case CalibrationMethod::entropy: return "entropy";
    case CalibrationMethod::mse: return "mse";
    case CalibrationMethod::automatic: return "auto";
  }
  return "?";
}

std::vector<Range> calibrate(CompiledModel& model, const std::vector<std::vector<Tensor>>& samples,
                             CalibrationMethod method, const std::function<void(int, int)>& progress,
                             const std::vector<ValueCalibration>& per_value) {
  if (samples.empty()) throw Error("calibration needs at least one sample");
  const size_t nv = model.graph().values.size();
  std::vector<Range> range(nv);
  auto method_of = [&](size_t v) { return v < per_value.size() && per_value[v].method ? *per_value[v].method : method; };
  auto steps_of = [&](size_t v) { return v < per_value.size() ? per_value[v].steps : 255; };
  bool hist = method != CalibrationMethod::minmax;
  for (const ValueCalibration& c : per_value) hist |= c.method && *c.method != CalibrationMethod::minmax;
  bool automatic = method == CalibrationMethod::automatic;
  for (const ValueCalibration& c : per_value) automatic |= c.method == CalibrationMethod::automatic;
  const int total = static_cast<int>(samples.size()) * (hist ? 2 : 1) + (automatic ? static_cast<int>(samples.size()) : 0);
  int done = 0;
  for (const auto& s : samples) {
    model.run_observed(s, [&](ValueId v, const TensorView& t) {
      if (t.dtype != DType::f32) return;
      Range& r = range[static_cast<size_t>(v)];
      const float* d = t.as<float>();
      for (int64_t i = 0, n = t.numel(); i < n; ++i) {
        if (!r.seen) r = {d[i], d[i], true};
        r.lo = std::min(r.lo, d[i]);
        r.hi = std::max(r.hi, d[i]);
      }
    });
    if (progress) progress(++done, total);
  }
  if (!hist) return range;
  std::vector<Histogram> h(nv);
  for (const auto& s : samples) {
    model.run_observed(s, [&](ValueId v, const TensorView& t) {
      const Range& r = range[static_cast<size_t>(v)];
      if (t.dtype != DType::f32 || !r.seen || r.hi <= r.lo) return;
      Histogram& hv = h[static_cast<size_t>(v)];
      const float* d = t.as<float>();
      const float scale = kBins / (r.hi - r.lo);
      for (int64_t i = 0, n = t.numel(); i < n; ++i)
        hv.count[static_cast<size_t>(std::clamp(static_cast<int>((d[i] - r.lo) * scale), 0, kBins - 1))] += 1;
      hv.total += static_cast<double>(t.numel());
    });
    if (progress) progress(++done, total);
  }
  std::vector<Range> chosen(nv);
  std::map<size_t, std::array<Range, kCandidates>> candidates;  // the values calibrated `automatic`
  for (size_t v = 0; v < nv; ++v) {
    chosen[v] = range[v];
    if (!range[v].seen || range[v].hi <= range[v].lo || method_of(v) == CalibrationMethod::minmax) continue;
    if (method_of(v) != CalibrationMethod::automatic) {
      chosen[v] = choose_range(h[v], range[v].lo, range[v].hi, method_of(v), steps_of(v));
      chosen[v].method = method_of(v);
      continue;
    }
    auto& c = candidates[v];
    for (size_t k = 0; k < kCandidates; ++k) {
      c[k] = kCandidateMethods[k] == CalibrationMethod::minmax
                 ? range[v]
                 : choose_range(h[v], range[v].lo, range[v].hi, kCandidateMethods[k], steps_of(v));
      c[k].method = kCandidateMethods[k];
      c[k].automatic = true;
    }
  }
  if (candidates.empty()) {  // nothing to measure: the third pass is done
    if (automatic && progress) progress(done = total, total);
    return chosen;
  }
  // The third pass: each candidate codes the value's samples, and its readers measure what that
  // costs them (quant/calibration_auto.h).
  const std::map<size_t, size_t> best = choose_candidates(model, samples, candidates, steps_of, [&] {
    if (progress) progress(++done, total);
  });
  for (auto& [v, c] : candidates)
    if (auto it = best.find(v); it != best.end()) chosen[v] = c[it->second];
  return chosen;
}

std::string describe_calibration(const std::vector<Range>& ranges) {
  std::map<CalibrationMethod, int> count;
  int total = 0;
  for (const Range& r : ranges)
    if (r.seen && r.automatic) ++count[r.method], ++total;
  if (!total) return "";
  std::string s = "calibration auto: " + std::to_string(total) +
                  " activation range(s), each the candidate with the least error as its readers weigh it:";
  for (CalibrationMethod m : kCandidateMethods)
    if (count[m]) s += std::string(" ") + calibration_method_name(m) + " " + std::to_string(count[m]);
  return s;
}

QuantParams activation_params(Range r, DType code) {
  const DTypeInfo& d = dtype_info(code);
  if (d.is_signed || d.is_float || d.bits > 8) throw Error(std::string("activation codes must be u8, u4, u2 or u1, not ") + d.name);
  const Affine a = affine_coding(r, static_cast<double>(d.qmax));  // unsigned: [0, qmax]
  QuantParams q;
  q.scale = {static_cast<float>(a.scale)};
  q.zero_point = {a.zero_point};
  if (code != DType::u8) q.code = code;  // u8 codes in u8 storage: the scheme need not say
  return q;
}

}  // namespace lowbit
