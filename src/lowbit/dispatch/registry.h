#pragma once
// The kernel registry: per op, an ordered list of candidates (best first). Each candidate states
// the CPU features it needs and a check that returns why it does not apply to a node. select()
// is the only place kernels are chosen; `explain` prints its Choice verbatim.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lowbit/ir/graph.h"
#include "lowbit/runtime/kernel.h"
#include "lowbit/runtime/node_context.h"
#include "lowbit/target/target.h"

namespace lowbit {

struct KernelCandidate {
  std::string op;                  // ONNX-style op name the candidate implements
  std::string name;                // what it computes, tile and ISA: "f32-conv2d-igemm-6x16-avx2"
  Arch arch = Arch::x86_64;        // ignored for portable kernels
  std::vector<Feature> features;   // CPU features it needs; empty = portable C++
  // "" when the candidate can run this node, otherwise the reason it cannot ("stride 3 unsupported").
  std::string (*check)(const NodeContext&) = nullptr;
  std::unique_ptr<Kernel> (*create)(const NodeContext&) = nullptr;  // nullptr: not in this build
  // Names of the micro-kernel functions it runs (unique, ISA-suffixed: "f32_gemm_6x16__avx2"),
  // so `inspect --kernels` can find them in the binary and count their key instructions.
  std::vector<std::string> ukernels = {};
  // Quantized kernels only: "" when this kernel is expected to beat the fp32 kernel of the same
  // node on its ISA, otherwise the measured reason it does not (read by the guard, quant/guard.h).
  std::string (*slower_than_fp32)(const NodeContext&) = nullptr;
  // Sub-byte rows: the codes they read natively (packed 4- / 2-bit weights, narrow or 1-bit
  // activations), as the node's input and weight code dtypes. The guard reports sub-byte nodes that
  // end up on a row without them (int8 rows run any narrower codes as int8) and matches a node's
  // codes against them to say why; `lowbit ops` prints them. Empty: not a sub-byte row.
  struct Codes {
    std::vector<DType> input, weights;
  };
  Codes subbyte_codes = {};
  // "" when this row is expected to be the fastest that can run the node, else the measured reason
  // it steps aside for a row below it (which also runs the node, exactly). Kept apart from `check`,
  // which says what the row can compute, so that the kernel tests run every row on every node it
  // can compute (candidate_cannot_run), not only where it is chosen.
  std::string (*steps_aside)(const NodeContext&) = nullptr;
  bool subbyte() const { return !subbyte_codes.input.empty() || !subbyte_codes.weights.empty(); }
  // True when this sub-byte row reads the given codes (kNone: the node has no such operand).
  bool reads_codes(std::optional<DType> input, std::optional<DType> weights) const;
};

// Kernels are compiled only for their own architecture, but the table lists every architecture's
// rows with their checks: a build for one architecture selects kernels for the other (explain,
// and quantizing for a foreign --target, as the study cross-compiled for AArch64 on x86). A row's
// create is nullptr in a build for another architecture; such a row is chosen, never created.
#if defined(__x86_64__)
#define LOWBIT_X86_ONLY(create) create
#else
#define LOWBIT_X86_ONLY(create) nullptr
#endif
#if defined(__aarch64__)
#define LOWBIT_AARCH64_ONLY(create) create
#else
#define LOWBIT_AARCH64_ONLY(create) nullptr
#endif

struct Rejection {
  const KernelCandidate* candidate;
  std::string reason;
};

struct Choice {
  const KernelCandidate* chosen = nullptr;
  std::vector<Rejection> rejected;
};

// All candidates for an op, best first (the dispatch table, dispatch/table.cc).
std::vector<const KernelCandidate*> candidates_for(std::string_view op);
const std::vector<KernelCandidate>& all_candidates();
// Picks the first candidate whose features the target has and whose check passes; records why
// each other candidate lost. A node attribute `kernel` (set by --autotune, kept in artifacts)
// pins a candidate by name when it applies. Throws lowbit::Error naming the node if none applies.
Choice select_kernel(const NodeContext& ctx);
// Candidate by exact name (LOWBIT_KERNEL overrides, autotune, artifacts); nullptr if unknown.
const KernelCandidate* find_candidate(std::string_view name);
// "" when `c` can run the node on the target, otherwise why not (missing features, check).
std::string candidate_cannot_run(const KernelCandidate& c, const NodeContext& ctx);
// candidate_cannot_run, then its speed rule (steps_aside): "" when select_kernel would take it.
std::string candidate_rejection(const KernelCandidate& c, const NodeContext& ctx);

// The node attribute that pins a kernel.
inline constexpr const char* kPinnedKernelAttr = "kernel";

}  // namespace lowbit
