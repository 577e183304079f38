#pragma once
// Compile = validate -> passes -> memory plan -> dispatch (kernel per node, weights packed once).
// Run = execute the steps over one activation arena.
//
// Concurrency: a compiled model is immutable once compiled, and run() (and its profiled and
// observed forms) may be called from many threads at once on one model. Each call borrows a run
// context: an activation arena, a thread pool of threads() threads, and the steps' operands bound
// to that arena. Contexts are kept in a free list and reused; a call that finds none idle makes
// another, so N concurrent callers hold N arenas (peak_activation_bytes() each) and N pools.
// Kernels are const while they run (Kernel::run): what they write besides their outputs is the
// calling thread's workspace (operators/operator_util.h). Outputs are bit-identical to a
// single-threaded caller's: every kernel's result is independent of which context ran it.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lowbit/dispatch/registry.h"
#include "lowbit/ir/graph.h"
#include "lowbit/runtime/thread_pool.h"
#include "lowbit/target/target.h"

namespace lowbit {

struct CompileOptions {
  Target target = host_target();
  int threads = 0;        // 0: all cores
  bool optimize = true;   // run the graph passes (folding, fusion); false: execute the graph as imported
  bool allow_foreign_target = false;  // compile for a target the host cannot run (explain/inspect only)
  // Time every applicable SIMD candidate per node on this host and pin the fastest (node
  // attribute `kernel`, which artifacts keep).
  bool autotune = false;
  // Let fp32 Convs apply the activation after them (SiLU, HardSwish, ...: fuse_epilogues). A model
  // that will be calibrated or quantized needs false: calibration reads each conv's output
  // before its activation, and calibrate_model refuses a graph without it.
  bool fuse_post_ops = true;
  // Bytes the activation arena may take (CLI --max-memory); 0: this machine's physical memory.
  // A model over it is refused at compile time, before the arena is allocated, with the figures.
  int64_t max_memory = 0;
};

// The machine's physical memory in bytes (the default memory cap).
int64_t physical_memory_bytes();
// "16G", "512M", "1048576" (K, M, G: powers of 1024): bytes; -1 when malformed.
int64_t parse_memory_size(const std::string& text);

struct Step {
  NodeId node;             // index into graph().nodes
  Choice choice;           // chosen kernel + rejected candidates with reasons
  std::unique_ptr<Kernel> kernel;
  int64_t macs = 0;
};

// One run's mutable state (see the top of this file).
struct RunContext {
  Tensor arena;
  std::unique_ptr<ThreadPool> pool;
  // Per step, the node's operands bound once to this arena and the constants: runs copy no shapes.
  std::vector<std::vector<TensorView>> inputs, outputs;
};

struct LayerTiming {
  NodeId node;
  double ms;
};

class CompiledModel {
 public:
  static std::unique_ptr<CompiledModel> compile(Graph graph, const CompileOptions& opts);

  // Inputs in the order of graph().inputs; dtype and shape must match (clear error otherwise).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  // Same, recording the time of every step.
  std::vector<Tensor> run_profiled(const std::vector<Tensor>& inputs, std::vector<LayerTiming>& timings) const;

  // Same, calling observe(value, data) for every node output as soon as it is computed
  // (calibration and per-layer accuracy tools read intermediate tensors through this).
  using Observer = std::function<void(ValueId, const TensorView&)>;
  std::vector<Tensor> run_observed(const std::vector<Tensor>& inputs, const Observer& observe) const;

  const Graph& graph() const { return graph_; }
  const std::vector<Step>& steps() const { return steps_; }
  const Target& target() const { return target_; }
  int threads() const { return threads_; }
  // Run contexts made so far (1 after compile; more once callers overlapped).
  int contexts() const;
  int64_t peak_activation_bytes() const { return arena_bytes_; }
  // Where value v lives in every run context's arena (bytes from its start); -1 for constants
  // and values outside the arena.
  int64_t arena_offset(ValueId v) const { return offsets_.at(static_cast<size_t>(v)); }
  int64_t weight_bytes() const;  // bytes of constant tensors the steps read (packed where packed)
  // Bytes the kernels hold in their own layouts (packed panels, transformed weights, requantization
  // constants), built from those constants at creation: 4- and 2-bit weights stay packed where the
  // chosen kernel reads them packed (kernels/qsub-gemm/qsub_panel.h), else they are int8 here.
  // Throws for a model whose kernels this CPU cannot create (compiled for a foreign target).
  int64_t kernel_weight_bytes() const;
  // "" when every step's kernel exists (this CPU runs the target), else why run() refuses.
  const std::string& unrunnable_reason() const { return unrunnable_; }
  // graph() with each kernel's weights in its own layout stored on its node (Kernel::prepacked), as
  // `quantize --prepack` saves it: a later compile whose kernel computes the same layout (same
  // kernel set, shapes and weights) reads the weights in place from the artifact's mapping instead
  // of packing them. `nodes` / `bytes`: how many layouts were stored and their size. Steps whose
  // kernel this CPU cannot create (a foreign target) store none.
  Graph graph_with_prepacked_weights(int* nodes = nullptr, int64_t* bytes = nullptr) const;
  // Kernels that read their weights from a stored layout (0 unless compiled from such a graph).
  int prepacked_kernels() const;
  double compile_ms() const { return compile_ms_; }

 private:
  CompiledModel() = default;
  std::vector<Tensor> execute(const std::vector<Tensor>& inputs, std::vector<LayerTiming>* timings,
                              const Observer* observe = nullptr) const;
  std::vector<Tensor> execute_in(RunContext& ctx, const std::vector<Tensor>& inputs, std::vector<LayerTiming>* timings,
                                 const Observer* observe) const;
  // A context with its own arena and operands; `pool` when given (compile's first), else a new one.
  std::unique_ptr<RunContext> make_context_with(std::unique_ptr<ThreadPool> pool) const;
  std::unique_ptr<RunContext> acquire_context() const;
  void release_context(std::unique_ptr<RunContext> ctx) const;

  Graph graph_;
  Target target_;
  std::vector<Step> steps_;
  int threads_ = 1;
  std::vector<int64_t> offsets_;  // arena offset per value, -1 for constants / non-arena
  int64_t arena_bytes_ = 0;
  std::string unrunnable_;  // why run() must refuse: the first step compiled for features this CPU lacks
  double compile_ms_ = 0;
  // The run contexts' free list: the one thing a run changes in the model, under its own lock.
  mutable std::mutex contexts_mu_;
  mutable std::vector<std::unique_ptr<RunContext>> idle_contexts_;
  mutable int contexts_made_ = 0;
  void autotune();
};

}  // namespace lowbit
