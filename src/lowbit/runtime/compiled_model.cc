#include "lowbit/runtime/compiled_model.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/common/settings.h"
#include "lowbit/ir/op_params.h"
#include "lowbit/passes/passes.h"
#include "lowbit/passes/qdq.h"

namespace lowbit {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

int64_t node_macs(const Graph& g, const Node& n) {
  if (n.op == "Conv" || n.op == "QConv" || n.op == "BinaryConv") return conv2d_params(g, n).macs();
  if (n.op == "Gemm" || n.op == "MatMul" || n.op == "QGemm") {
    const Shape& y = g.value(n.outputs[0]).shape;
    const Shape& a = g.value(n.inputs[0]).shape;
    if (a.empty()) return 0;
    int64_t k = n.op == "Gemm" && n.attrs.get_int("transA", 0) ? a[0] : a.back();
    return num_elements(y) * k;
  }
  return 0;
}

std::string bytes_str(int64_t b) {
  char buf[48];
  if (b >= (int64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1 << 30));
  else std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

}  // namespace

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

int64_t parse_memory_size(const std::string& text) { return parse_cache_size(text); }

std::unique_ptr<CompiledModel> CompiledModel::compile(Graph graph, const CompileOptions& opts) {
  auto t0 = Clock::now();
  std::unique_ptr<CompiledModel> m(new CompiledModel());
  m->target_ = opts.target;
  if (!opts.allow_foreign_target) {
    std::string lacking = host_target().missing(opts.target);
    if (!lacking.empty())
      throw Error("target '" + opts.target.name + "' needs " + lacking +
                  ", which this CPU lacks: it can be explained, inspected or saved here, not run");
  }
  if (opts.optimize) fuse_qdq(graph);  // before folding turns DequantizeLinear(i8 weights) into fp32
  validate_and_fold_constants(graph);
  if (opts.optimize) {
    remove_identities(graph);
    lower_conv_transpose(graph);
    fold_batch_norm(graph);
    binarize_convs(graph);
    fold_conv_affine(graph);  // after binarize: a binary conv's +-1 weights stay as they are
    fuse_silu(graph);
    fuse_hardswish(graph);
    fuse_epilogues(graph, opts.fuse_post_ops);
    pack_binary_chains(graph);
  }
  graph.remove_dead();
  if (opts.optimize) mark_concats_in_place(graph);  // last: it depends on the final values
  // Passes rewrite nodes; validating again proves they kept every node well-typed.
  validate_and_fold_constants(graph);
  m->graph_ = std::move(graph);

  MemoryPlan plan = plan_memory(m->graph_);
  m->offsets_ = std::move(plan.offset);
  m->arena_bytes_ = plan.arena_bytes;
  const int64_t cap = opts.max_memory > 0 ? opts.max_memory : physical_memory_bytes();
  if (cap > 0 && m->arena_bytes_ > cap)
    throw Error("the activations need " + bytes_str(m->arena_bytes_) + " (the memory plan's arena), over the " +
                "memory cap of " + bytes_str(cap) + (opts.max_memory > 0 ? " (--max-memory)" : " (this machine's memory; --max-memory sets another)") +
                "; check the input shapes");
  // The first run context's pool settles the thread count the kernels are made for.
  auto first_pool = std::make_unique<ThreadPool>(opts.threads);
  m->threads_ = first_pool->size();

  const bool trace = verbose("dispatch");  // LOWBIT_VERBOSE=dispatch
  const Target& host = host_target();
  for (size_t i = 0; i < m->graph_.nodes.size(); ++i) {
    const Node& n = m->graph_.nodes[i];
    NodeContext ctx{m->graph_, n, m->target_, m->threads_};
    Step s;
    s.node = static_cast<NodeId>(i);
    s.choice = select_kernel(ctx);
    // A kernel for ISA features this CPU lacks is chosen (explain, inspect and artifacts for a
    // foreign target need the choice) but not created: creating one may already execute its
    // instructions (an AVX-512 kernel table's initialiser raised SIGILL on an AVX2-only host).
    bool runnable = s.choice.chosen->create != nullptr;  // null: another architecture's row
    for (Feature f : s.choice.chosen->features) runnable &= host.has(f);
    if (runnable) s.kernel = s.choice.chosen->create(ctx);
    else if (m->unrunnable_.empty())
      m->unrunnable_ = "node " + n.label() + " is compiled for " + s.choice.chosen->name +
                       ", which this CPU cannot run (target '" + m->target_.name + "')";
    s.macs = node_macs(m->graph_, n);
    if (trace) {
      std::string msg = "lowbit dispatch: " + n.label() + " -> " + s.choice.chosen->name;
      for (auto& r : s.choice.rejected) msg += "\nlowbit dispatch:   skipped " + r.candidate->name + ": " + r.reason;
      log_message(LogLevel::trace, msg);
    }
    m->steps_.push_back(std::move(s));
  }
  // The first context: its arena and bound operands, with the pool made above.
  m->idle_contexts_.push_back(m->make_context_with(std::move(first_pool)));
  m->contexts_made_ = 1;
  if (opts.autotune) m->autotune();
  m->compile_ms_ = ms_since(t0);
  return m;
}

std::unique_ptr<RunContext> CompiledModel::make_context_with(std::unique_ptr<ThreadPool> pool) const {
  auto c = std::make_unique<RunContext>();
  c->arena = Tensor(DType::u8, {std::max<int64_t>(arena_bytes_, 1)});
  c->pool = pool ? std::move(pool) : std::make_unique<ThreadPool>(threads_);
  uint8_t* base = c->arena.data<uint8_t>();
  auto view_of = [&](ValueId v) {
    if (v == kNoValue) return TensorView{};
    const Value& val = graph_.value(v);
    if (val.constant) return val.constant->view();
    return TensorView{base + offsets_[static_cast<size_t>(v)], val.dtype, val.shape};
  };
  c->inputs.resize(steps_.size());
  c->outputs.resize(steps_.size());
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Node& n = graph_.nodes[static_cast<size_t>(steps_[i].node)];
    for (ValueId v : n.inputs) c->inputs[i].push_back(view_of(v));
    for (ValueId v : n.outputs) c->outputs[i].push_back(view_of(v));
  }
  return c;
}

std::unique_ptr<RunContext> CompiledModel::acquire_context() const {
  {
    std::lock_guard<std::mutex> lock(contexts_mu_);
    if (!idle_contexts_.empty()) {
      auto c = std::move(idle_contexts_.back());
      idle_contexts_.pop_back();
      return c;
    }
    ++contexts_made_;
  }
  return make_context_with(nullptr);  // outside the lock: an arena and a pool take a while
}

void CompiledModel::release_context(std::unique_ptr<RunContext> c) const {
  std::lock_guard<std::mutex> lock(contexts_mu_);
  idle_contexts_.push_back(std::move(c));
}

int CompiledModel::contexts() const {
  std::lock_guard<std::mutex> lock(contexts_mu_);
  return contexts_made_;
}

// Times each applicable SIMD candidate of every node in place (on the arena's current, zeroed
// contents: kernel speed does not depend on the values) and pins the fastest.
void CompiledModel::autotune() {
  if (!host_target().missing(target_).empty()) throw Error("--autotune needs a target the host can run");
  RunContext& c = *idle_contexts_.front();  // compile time: nobody else holds it
  auto time_kernel = [&](const Kernel& k, const Step& s) {
    const size_t i = static_cast<size_t>(&s - steps_.data());
    k.run(c.inputs[i], c.outputs[i], *c.pool);
    double best = 1e300;
    for (int r = 0; r < 5; ++r) {
      auto t0 = Clock::now();
      k.run(c.inputs[i], c.outputs[i], *c.pool);
      best = std::min(best, ms_since(t0));
    }
    return best;
  };
  for (Step& s : steps_) {
    Node& n = graph_.nodes[static_cast<size_t>(s.node)];
    std::vector<const KernelCandidate*> options{s.choice.chosen};
    for (auto& r : s.choice.rejected)
      if (r.reason.rfind("applies", 0) == 0 && !r.candidate->features.empty()) options.push_back(r.candidate);
    if (options.size() < 2 || s.choice.chosen->features.empty()) continue;
    NodeContext ctx{graph_, n, target_, threads_};
    const KernelCandidate* best = s.choice.chosen;
    double best_ms = time_kernel(*s.kernel, s);
    for (size_t i = 1; i < options.size(); ++i) {
      auto k = options[i]->create(ctx);
      double ms = time_kernel(*k, s);
      if (ms < best_ms) best_ms = ms, best = options[i];
    }
    n.attrs.set(kPinnedKernelAttr, best->name);
    if (best != s.choice.chosen) {
      s.choice = select_kernel(ctx);
      s.kernel = s.choice.chosen->create(ctx);
    }
  }
}

int64_t CompiledModel::weight_bytes() const {
  std::vector<char> seen(graph_.values.size(), 0);
  int64_t bytes = 0;
  for (const Node& n : graph_.nodes)
    for (ValueId v : n.inputs)
      if (v != kNoValue && graph_.is_constant(v) && !seen[static_cast<size_t>(v)]) {
        seen[static_cast<size_t>(v)] = 1;
        bytes += graph_.constant(v)->nbytes();
      }
  return bytes;
}

int64_t CompiledModel::kernel_weight_bytes() const {
  // The layouts exist only once the kernels do: a model compiled for a foreign target has none.
  if (!unrunnable_.empty()) throw Error("kernel weight bytes are counted on the kernels themselves, and " + unrunnable_);
  int64_t bytes = 0;
  for (const Step& s : steps_) bytes += s.kernel->packed_weight_bytes();
  return bytes;
}

Graph CompiledModel::graph_with_prepacked_weights(int* nodes, int64_t* bytes) const {
  Graph g = graph_;
  int count = 0;
  int64_t total = 0;
  for (const Step& s : steps_) {
    std::string key;
    Tensor blob;
    Node& n = g.nodes[static_cast<size_t>(s.node)];
    // A kernel this CPU cannot create (a foreign target) has no layout to store: it is packed
    // where the artifact is compiled, as without --prepack.
    if (!s.kernel || !s.kernel->prepacked(key, blob)) {
      n.attrs.erase(kPrepackedAttr);  // a stale layout would only cost its bytes: drop it
      n.attrs.erase(kPrepackedKeyAttr);
      continue;
    }
    n.attrs.set(kPrepackedAttr, std::move(blob));
    n.attrs.set(kPrepackedKeyAttr, key);
    ++count;
    total += n.attrs.get_tensor(kPrepackedAttr)->nbytes();
  }
  if (nodes) *nodes = count;
  if (bytes) *bytes = total;
  return g;
}

int CompiledModel::prepacked_kernels() const {
  int n = 0;
  for (const Step& s : steps_) n += s.kernel && s.kernel->uses_prepacked();
  return n;
}

std::vector<Tensor> CompiledModel::run(const std::vector<Tensor>& inputs) const { return execute(inputs, nullptr); }

std::vector<Tensor> CompiledModel::run_profiled(const std::vector<Tensor>& inputs, std::vector<LayerTiming>& timings) const {
  timings.clear();
  return execute(inputs, &timings);
}

std::vector<Tensor> CompiledModel::run_observed(const std::vector<Tensor>& inputs, const Observer& observe) const {
  return execute(inputs, nullptr, &observe);
}

std::vector<Tensor> CompiledModel::execute(const std::vector<Tensor>& inputs, std::vector<LayerTiming>* timings,
                                           const Observer* observe) const {
  const Graph& g = graph_;
  if (!unrunnable_.empty()) throw Error(unrunnable_);
  if (inputs.size() != g.inputs.size())
    throw Error("model takes " + std::to_string(g.inputs.size()) + " input(s), got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = g.value(g.inputs[i]);
    if (inputs[i].dtype() != v.dtype || inputs[i].shape() != v.shape)
      throw Error("input '" + v.name + "' must be " + dtype_name(v.dtype) + " " + shape_str(v.shape) + ", got " +
                  dtype_name(inputs[i].dtype()) + " " + shape_str(inputs[i].shape()));
  }
  std::unique_ptr<RunContext> c = acquire_context();
  try {
    auto results = execute_in(*c, inputs, timings, observe);
    release_context(std::move(c));
    return results;
  } catch (...) {
    release_context(std::move(c));  // an observer may throw: the context is still whole
    throw;
  }
}

std::vector<Tensor> CompiledModel::execute_in(RunContext& c, const std::vector<Tensor>& inputs,
                                              std::vector<LayerTiming>* timings, const Observer* observe) const {
  const Graph& g = graph_;
  uint8_t* arena = c.arena.data<uint8_t>();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (offsets_[static_cast<size_t>(g.inputs[i])] >= 0)
      std::memcpy(arena + offsets_[static_cast<size_t>(g.inputs[i])], inputs[i].raw(),
                  static_cast<size_t>(inputs[i].nbytes()));
  }
  if (observe)
    for (size_t i = 0; i < inputs.size(); ++i) (*observe)(g.inputs[i], inputs[i].view());
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    if (timings) {
      auto t0 = Clock::now();
      s.kernel->run(c.inputs[i], c.outputs[i], *c.pool);
      timings->push_back({s.node, ms_since(t0)});
    } else {
      s.kernel->run(c.inputs[i], c.outputs[i], *c.pool);
    }
    if (observe) {
      const Node& n = g.nodes[static_cast<size_t>(s.node)];
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (n.outputs[k] != kNoValue) (*observe)(n.outputs[k], c.outputs[i][k]);
    }
  }
  std::vector<Tensor> results;
  for (ValueId v : g.outputs) {
    const Value& val = g.value(v);
    if (val.constant) {
      results.push_back(val.constant->clone());
      continue;
    }
    Tensor t(val.dtype, val.shape);
    std::memcpy(t.raw(), arena + offsets_[static_cast<size_t>(v)], static_cast<size_t>(t.nbytes()));
    results.push_back(std::move(t));
  }
  return results;
}

}  // namespace lowbit
