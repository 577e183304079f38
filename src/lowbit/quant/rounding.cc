#include "lowbit/quant/rounding.h"

#include <algorithm>
#include <cmath>

#include "lowbit/common/error.h"
#include "lowbit/common/multiversion.h"
#include "lowbit/ir/codes.h"
#include "lowbit/quant/patches.h"
#include "lowbit/runtime/thread_pool.h"

// The loops below are quantize-time linear algebra (on ResNet-50 w4a8 about 10^11 multiply-adds:
// the patches' second moments, three Cholesky factorisations of 4608 x 4608 and the error-feedback
// walk). GCC's function multi-versioning compiles them for AVX-512, AVX2 and baseline x86-64 and
// picks one per CPU at load time. Every accumulator is a scalar of its own in the source (the lane
// arrays below), and this file is built with -ffp-contract=off (src/lowbit/CMakeLists.txt), so
// each version computes the same float operations in the same order: the codes, and an
// artifact's bytes, do not depend on the CPU that quantized.

namespace lowbit {

Rounding parse_rounding(const std::string& s) {
  if (s == "nearest") return Rounding::nearest;
  if (s == "gptq") return Rounding::gptq;
  throw Error("unknown rounding '" + s + "' (nearest, gptq)");
}

const char* rounding_name(Rounding r) { return r == Rounding::gptq ? "gptq" : "nearest"; }

namespace {

// C[i][j] += sign * sum_p X[p][i] X[p][j] for i <= j < n and i in [i_begin, i_end) (C with row
// stride ldc, X: P rows of stride ldx), by 4 x 32 register tiles: the patches' second moments and
// Cholesky's trailing update.
LOWBIT_MULTIVERSION
void syrk_upper_rows(float* C, int64_t ldc, const float* X, int64_t ldx, int64_t P, int64_t n, float sign,
                     int64_t i_begin, int64_t i_end) {
  constexpr int R = 4, W = 32;
  for (int64_t i0 = i_begin; i0 < i_end; i0 += R) {
    const int64_t ni = std::min<int64_t>(R, i_end - i0);
    for (int64_t j0 = i0; j0 < n; j0 += W) {
      const int64_t nj = std::min<int64_t>(W, n - j0);
      float acc[R][W] = {};
      if (ni == R && nj == W) {
        for (int64_t p = 0; p < P; ++p) {
          const float* x = X + p * ldx;
          for (int r = 0; r < R; ++r) {
            const float a = x[i0 + r];
            for (int j = 0; j < W; ++j) acc[r][j] += a * x[j0 + j];
          }
        }
      } else {
        for (int64_t p = 0; p < P; ++p) {
          const float* x = X + p * ldx;
          for (int64_t r = 0; r < ni; ++r)
            for (int64_t j = 0; j < nj; ++j) acc[r][j] += x[i0 + r] * x[j0 + j];
        }
      }
      for (int64_t r = 0; r < ni; ++r)
        for (int64_t j = 0; j < nj; ++j)
          if (j0 + j >= i0 + r) C[(i0 + r) * ldc + j0 + j] += sign * acc[r][j];
    }
  }
}

// The same over all rows, 16-row chunks spread over the pool's threads (each C element is one
// task's, so the result does not depend on the thread count).
void syrk_upper(ThreadPool& pool, float* C, int64_t ldc, const float* X, int64_t ldx, int64_t P, int64_t n, float sign) {
  constexpr int64_t kChunk = 16;
  pool.parallel_for((n + kChunk - 1) / kChunk, [&](int64_t t, int) {
    syrk_upper_rows(C, ldc, X, ldx, P, n, sign, t * kChunk, std::min(n, (t + 1) * kChunk));
  });
}

// y[0, n) -= a * x[0, n)
LOWBIT_MULTIVERSION
void axpy_sub(float* y, const float* x, float a, int64_t n) {
  for (int64_t l = 0; l < n; ++l) y[l] -= a * x[l];
}

// In place: A (K x K, symmetric, upper triangle read) becomes R, upper triangular with A = R^T R.
// Right-looking by blocks of 64 rows: factor the block's rows (substitution, as row updates), then
// take their outer products off the trailing matrix (syrk_upper), which is nearly all the work
// (K^3 / 6 multiply-adds: 1.6 * 10^10 for a 3x3 conv over 512 channels). False if A is not
// positive definite.
bool cholesky_upper(ThreadPool& pool, float* A, int64_t K) {
  constexpr int64_t B = 64;
  for (int64_t k0 = 0; k0 < K; k0 += B) {
    const int64_t kb = std::min(B, K - k0), rest = K - k0;
    for (int64_t i = k0; i < k0 + kb; ++i) {
      float* ri = A + i * K;
      for (int64_t l = k0; l < i; ++l) axpy_sub(ri + i, A + l * K + i, A[l * K + i], K - i);
      const float d = ri[i];
      if (!(d > 0) || !std::isfinite(d)) return false;
      const float r = std::sqrt(d);
      for (int64_t j = i; j < K; ++j) ri[j] /= r;
    }
    if (kb < rest)
      syrk_upper(pool, A + (k0 + kb) * K + k0 + kb, K, A + k0 * K + k0 + kb, K, kb, rest - kb, -1.0f);
  }
  for (int64_t i = 0; i < K; ++i) std::fill_n(A + i * K, i, 0.0f);
  return true;
}

// Where row m's scales are: per output channel, or group-wise (a scale per block of input
// channels and tap).
struct Scales {
  const QuantParams& q;
  WeightGroups wg;
  int64_t taps;
  float at(int64_t m, int64_t k) const {
    if (q.block_size <= 0) return q.scale[static_cast<size_t>(m)];
    return q.scale[static_cast<size_t>(wg.index(m, k / taps, k % taps))];
  }
};

constexpr int kRows = 8;           // output channels walked together (they share each row of N)
constexpr int kWalk = 2 * kRows;   // each walked twice: GPTQ's choice, and the nearest codes' error

// One output channel's walk: its weights, scales, and where its codes and dequantized weights go
// (fixed: the nearest codes, only measured).
struct WalkRow {
  const float* w;
  const float* s;
  int32_t* codes;
  float* wq;
  bool fixed;
};

constexpr int64_t kBlock = 64;  // columns whose pushes onto the earlier columns are made together

// T[r][l] += sum_b D[r][b] N[j0 + b][l] for l < j0 and r < nrows: a block's errors pushed onto every
// earlier column at once, by 8-row x 32-column register tiles (GPTQ's "lazy batch" updates: each
// T element is read and written once per block instead of once per column).
LOWBIT_MULTIVERSION
void push_block(float* T, int64_t K, const float* D, int64_t nb, const float* N, int64_t j0, int nrows) {
  constexpr int R = 8, C = 32;
  for (int r0 = 0; r0 < nrows; r0 += R) {
    const int nr = std::min(R, nrows - r0);
    for (int64_t l0 = 0; l0 < j0; l0 += C) {
      const int64_t nc = std::min<int64_t>(C, j0 - l0);
      float acc[R][C] = {};
      if (nr == R && nc == C) {
        for (int64_t b = 0; b < nb; ++b) {
          const float* n = N + (j0 + b) * K + l0;
          for (int r = 0; r < R; ++r) {
            const float dv = D[(r0 + r) * kBlock + b];
            for (int c = 0; c < C; ++c) acc[r][c] += dv * n[c];
          }
        }
      } else {
        for (int64_t b = 0; b < nb; ++b) {
          const float* n = N + (j0 + b) * K + l0;
          for (int r = 0; r < nr; ++r)
            for (int64_t c = 0; c < nc; ++c) acc[r][c] += D[(r0 + r) * kBlock + b] * n[c];
        }
      }
      for (int r = 0; r < nr; ++r)
        for (int64_t c = 0; c < nc; ++c) T[(r0 + r) * K + l0 + c] += acc[r][c];
    }
  }
}

// Babai's nearest plane over `rows` walks: columns from last to first, column j rounded after the
// errors of the later columns were pushed onto it (T += d_j N[j], N[j][l] = R[l][j] / R[l][l]):
// at once onto the columns of its own block, by push_block onto the earlier ones. Row j of
// R (W - W_q) is R[j][j] (T_j - q_j), so the walk also sums each row's damped error
// sum_j (R[j][j] (T_j - q_j))^2 into err[r].
void walk(const WalkRow* rows, int nrows, const float* N, const float* diag2, int64_t K, float lo, float hi, float* T,
          float* D, double* err) {
  for (int r = 0; r < nrows; ++r) std::copy_n(rows[r].w, K, T + r * K);
  for (int r = 0; r < nrows; ++r) err[r] = 0;
  for (int64_t end = K; end > 0; end -= kBlock) {
    const int64_t j0 = std::max<int64_t>(0, end - kBlock);
    for (int64_t j = end - 1; j >= j0; --j) {
      const float* n = N + j * K;
      for (int r = 0; r < nrows; ++r) {
        const WalkRow& w = rows[r];
        float* t = T + r * K;
        const float sc = w.s[j], tj = t[j];
        const float c = w.fixed ? static_cast<float>(w.codes[j]) : std::clamp(std::nearbyint(tj / sc), lo, hi);
        if (!w.fixed) w.codes[j] = static_cast<int32_t>(c);
        const float q = c * sc;
        if (w.wq) w.wq[j] = q;
        const float d = w.w[j] - q;
        D[r * kBlock + (j - j0)] = d;
        err[r] += double(diag2[j]) * (double(tj) - q) * (double(tj) - q);
        for (int64_t l = j0; l < j; ++l) t[l] += d * n[l];
      }
    }
    push_block(T, K, D, end - j0, N, j0, nrows);
  }
}

struct Collector {
  ThreadPool* pool;
  PatchGeometry geo;
  LayerInputStats* stats;
  std::vector<float> patches;  // positions x K of one group
};

// Adds the patches of `take` evenly spaced output positions of x (offset by the sample index,
// so that samples see different positions) to the stats.
void accumulate(Collector& c, const TensorView& x, int64_t take, int64_t sample) {
  const PatchGeometry& p = c.geo;
  const int64_t N = x.shape.at(0), per = p.OH * p.OW, total = N * per, K = p.K();
  take = std::min(take, total);
  if (take <= 0) return;
  const float* xd = x.as<float>();
  LayerInputStats& s = *c.stats;
  c.patches.assign(static_cast<size_t>(take * K), 0.0f);
  for (int64_t g = 0; g < p.groups; ++g) {
    for (int64_t i = 0; i < take; ++i)
      extract_patch(p, xd, sampled_position(i, take, total, sample), g, c.patches.data() + i * K);
    syrk_upper(*c.pool, s.H.data() + g * K * K, K, c.patches.data(), K, take, K, 1.0f);
    double* sum = s.sum.data() + g * K;
    for (int64_t i = 0; i < take; ++i)
      for (int64_t k = 0; k < K; ++k) sum[k] += c.patches[static_cast<size_t>(i * K + k)];
  }
  s.positions += take;
}

}  // namespace

LayerInputs collect_layer_inputs(CompiledModel& fp32, const std::vector<std::vector<Tensor>>& samples,
                                 const std::set<std::string>& nodes, int64_t max_positions) {
  LayerInputs out;
  if (nodes.empty()) return out;
  if (samples.empty()) throw Error("--rounding gptq needs calibration samples");
  const Graph& g = fp32.graph();
  ThreadPool pool(0);
  std::map<ValueId, std::vector<Collector>> by_input;
  for (const Node& n : g.nodes) {
    if (!nodes.count(n.name)) continue;
    if ((n.op != "Conv" && n.op != "Gemm") || n.inputs.size() < 2 || !g.is_constant(n.inputs[1]))
      throw Error("node " + n.label() + ": --rounding gptq rounds Conv and Gemm weights, not " + n.op);
    const PatchGeometry geo = patch_geometry(g, n);
    LayerInputStats& s = out[n.name];
    s.groups = geo.groups;
    s.K = geo.K();
    s.H.assign(static_cast<size_t>(s.groups * s.K * s.K), 0.0f);
    s.sum.assign(static_cast<size_t>(s.groups * s.K), 0.0);
    by_input[n.inputs[0]].push_back({&pool, geo, &s, {}});
  }
  const int64_t per_sample = (max_positions + static_cast<int64_t>(samples.size()) - 1) / static_cast<int64_t>(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    auto see = [&](ValueId v, const TensorView& t) {
      auto it = by_input.find(v);
      if (it == by_input.end() || t.dtype != DType::f32) return;
      for (Collector& c : it->second) accumulate(c, t, per_sample, static_cast<int64_t>(i));
    };
    fp32.run_observed(samples[i], see);  // graph inputs included
  }
  for (auto& [name, s] : out)  // the lower triangle from the upper
    for (int64_t gi = 0; gi < s.groups; ++gi) {
      float* H = s.H.data() + gi * s.K * s.K;
      for (int64_t i = 0; i < s.K; ++i)
        for (int64_t j = 0; j < i; ++j) H[i * s.K + j] = H[j * s.K + i];
    }
  return out;
}

RoundingOutcome round_weights_gptq(const Tensor& w, const QuantParams& q, DType code, DType storage,
                                   const LayerInputStats& s, Tensor& codes, int threads) {
  RoundingOutcome out;
  const DTypeInfo& d = dtype_info(code);
  const int64_t M = w.shape().at(0), K = w.numel() / std::max<int64_t>(M, 1);
  if (K != s.K || s.groups <= 0 || M % s.groups != 0 || s.positions <= 0)
    throw Error("--rounding gptq: weights [" + std::to_string(M) + " x " + std::to_string(K) +
                "] do not match their layer's input stats (" + std::to_string(s.groups) + " group(s) of " +
                std::to_string(s.K) + ")");
  const float lo = static_cast<float>(d.qmin + (q.narrow ? 1 : 0)), hi = static_cast<float>(d.qmax);
  const Scales scales{q, weight_groups(w.shape(), q.block_size), K / std::max<int64_t>(w.shape().size() > 1 ? w.shape()[1] : 1, 1)};
  const float* W = w.data<float>();
  const int64_t Mg = M / s.groups;

  // Per group: the damped factor (GPTQ's 1% of the mean diagonal; inputs that never varied get a
  // unit diagonal, as GPTQ's do; more damping if float rounding leaves H indefinite), as
  // N[j][l] = R[l][j] / R[l][l] (l < j) and R[j][j]^2.
  struct Factor {
    std::vector<float> N, diag2;
    double damp = 0;
  };
  ThreadPool pool(threads);  // 0: every core
  std::vector<Factor> F(static_cast<size_t>(s.groups));
  for (int64_t g = 0; g < s.groups; ++g) {
    std::vector<float> A(s.H.begin() + g * K * K, s.H.begin() + (g + 1) * K * K);
    double mean_diag = 0;
    for (int64_t k = 0; k < K; ++k) {
      float& a = A[static_cast<size_t>(k * K + k)];
      if (!(a > 0)) a = 1.0f;
      mean_diag += a;
    }
    mean_diag /= static_cast<double>(K);
    bool ok = false;
    std::vector<float> R;
    Factor& f = F[static_cast<size_t>(g)];
    for (double damp = 0.01; damp <= 10.0 && !ok; damp *= 10) {
      R = A;
      f.damp = damp * mean_diag;
      for (int64_t k = 0; k < K; ++k) R[static_cast<size_t>(k * K + k)] += static_cast<float>(f.damp);
      ok = cholesky_upper(pool, R.data(), K);
    }
    if (!ok) return out;  // nearest codes, not applied
    f.N.assign(static_cast<size_t>(K * K), 0.0f);
    f.diag2.resize(static_cast<size_t>(K));
    for (int64_t l = 0; l < K; ++l) {
      const float rll = R[static_cast<size_t>(l * K + l)];
      f.diag2[static_cast<size_t>(l)] = rll * rll;
      for (int64_t j = l + 1; j < K; ++j) f.N[static_cast<size_t>(j * K + l)] = R[static_cast<size_t>(l * K + j)] / rll;
    }
  }

  // Rows in blocks of kRows within a group, spread over threads; each block's result depends only
  // on its rows, so the thread count does not change a bit. Each row is walked twice in one pass:
  // freely (GPTQ's codes) and held to the nearest codes (their error on the same factor).
  std::vector<int32_t> new_codes(static_cast<size_t>(M * K)), near_codes(static_cast<size_t>(M * K));
  std::vector<float> dq(static_cast<size_t>(M * K)), scale_of(static_cast<size_t>(M * K));
  std::vector<double> err_near(static_cast<size_t>(M)), err_new(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      const float sc = scales.at(m, k);
      scale_of[static_cast<size_t>(m * K + k)] = sc;
      near_codes[static_cast<size_t>(m * K + k)] = static_cast<int32_t>(std::clamp(std::nearbyint(W[m * K + k] / sc), lo, hi));
    }
  const int64_t blocks_per_group = (Mg + kRows - 1) / kRows, tasks = s.groups * blocks_per_group;
  std::vector<std::vector<float>> scratch(static_cast<size_t>(pool.size()));
  pool.parallel_for(tasks, [&](int64_t task, int thread) {
    const int64_t g = task / blocks_per_group, m0 = g * Mg + task % blocks_per_group * kRows;
    const int rows = static_cast<int>(std::min<int64_t>(kRows, g * Mg + Mg - m0));
    std::vector<float>& T = scratch[static_cast<size_t>(thread)];
    T.resize(static_cast<size_t>(kWalk * (K + kBlock)));
    WalkRow wr[kWalk];
    for (int r = 0; r < rows; ++r) {
      const int64_t m = m0 + r;
      const size_t at = static_cast<size_t>(m * K);
      wr[r] = {W + m * K, scale_of.data() + at, new_codes.data() + at, dq.data() + at, false};
      wr[rows + r] = {W + m * K, scale_of.data() + at, near_codes.data() + at, nullptr, true};
    }
    double e[kWalk];
    const Factor& f = F[static_cast<size_t>(g)];
    walk(wr, 2 * rows, f.N.data(), f.diag2.data(), K, lo, hi, T.data(), T.data() + kWalk * K, e);
    // The damped errors less the damping's part: dW^T H dW.
    for (int r = 0; r < rows; ++r) {
      const int64_t m = m0 + r;
      double sg = 0, sn = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double dgk = double(W[m * K + k]) - dq[static_cast<size_t>(m * K + k)];
        const float qn = static_cast<float>(near_codes[static_cast<size_t>(m * K + k)]) * scale_of[static_cast<size_t>(m * K + k)];
        const double dnk = double(W[m * K + k]) - qn;  // as the walk computes its q
        sg += dgk * dgk;
        sn += dnk * dnk;
      }
      err_new[static_cast<size_t>(m)] = e[r] - f.damp * sg;
      err_near[static_cast<size_t>(m)] = e[rows + r] - f.damp * sn;
    }
  });
  double en = 0, eg = 0;
  for (int64_t m = 0; m < M; ++m) en += err_near[static_cast<size_t>(m)], eg += err_new[static_cast<size_t>(m)];
  out.nearest_error = en;
  out.error = eg;
  if (!(eg < en)) {
    out.error = out.nearest_error;
    return out;
  }
  out.applied = true;
  for (int64_t i = 0; i < M * K; ++i) store_code(codes.raw(), storage, i, new_codes[static_cast<size_t>(i)]);
  // Bias correction: the codes shift the layer's mean output by (W - W_q) mean(x); the bias takes
  // it back.
  out.bias_shift.assign(static_cast<size_t>(M), 0.0f);
  for (int64_t m = 0; m < M; ++m) {
    const double* sum = s.sum.data() + m / Mg * K;
    double shift = 0;
    for (int64_t k = 0; k < K; ++k) shift += (double(W[m * K + k]) - dq[static_cast<size_t>(m * K + k)]) * sum[k];
    out.bias_shift[static_cast<size_t>(m)] = static_cast<float>(shift / static_cast<double>(s.positions));
  }
  return out;
}

std::string describe_rounding(RoundingState& s) {
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<double> ratios;
  int kept = 0;
  for (auto& [node, o] : s.outcomes) {
    if (!o.applied) ++kept;
    else ratios.push_back(o.error / std::max(o.nearest_error, 1e-300));
  }
  std::sort(ratios.begin(), ratios.end());
  auto pct = [](double r) { return std::to_string(static_cast<int>(std::lround(r * 100))) + "%"; };
  std::string msg = "--rounding gptq: " + std::to_string(ratios.size()) + " of " + std::to_string(s.outcomes.size()) +
                    " quantized layer(s) re-rounded against their calibration inputs";
  if (!ratios.empty())
    msg += ", each keeping " + pct(ratios.front()) + "-" + pct(ratios.back()) + " (median " + pct(ratios[ratios.size() / 2]) +
           ") of nearest rounding's output error on those inputs";
  if (kept) msg += "; " + std::to_string(kept) + " kept the nearest codes (no lower error)";
  return msg + " (LOWBIT_VERBOSE=rounding: per layer)";
}

}  // namespace lowbit
