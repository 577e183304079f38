#pragma once
// The never-silently-slower guard. After quantization, every quantized node is dispatched for the
// target; a node whose chosen kernel is not expected to beat its fp32 counterpart (no SIMD int8
// kernel for this target, shape or dtype pairing) is reported, and by policy kept in fp32
// (default), refused (error) or kept slow (allow). Nothing happens silently.
#include <memory>
#include <string>
#include <vector>

#include "lowbit/quant/quantize.h"

namespace lowbit {

enum class SlowPolicy { fp32, error, allow };
SlowPolicy parse_slow_policy(const std::string& s);  // "fp32" | "error" | "allow"

struct SlowNode {
  std::string node, op, kernel;
  std::string reason;  // why every fast candidate was rejected
};

// Quantized nodes of a compiled quantized model that run on a portable (non-SIMD) kernel.
std::vector<SlowNode> find_slow_quantized_nodes(const CompiledModel& q);

// Sub-byte nodes (4- or 2-bit weight or activation codes) that run an int8 kernel on their codes:
// exact (the codes fit int8, so outputs are bit-identical to a sub-byte kernel's), but without
// the sub-byte speed-up. `reason` says why no sub-byte kernel was chosen.
std::vector<SlowNode> find_subbyte_on_int8(const CompiledModel& q);
// --on-slow=allow: pins (in g, q's graph) each sub-byte node on an int8 row to the best sub-byte row
// that reads its codes but stepped aside (KernelCandidate::steps_aside). True if any was pinned.
bool pin_stepped_aside_subbyte_rows(const CompiledModel& q, Graph& g);
// The degenerate-graph detector: runs `q` on the inputs and lists the QConv / QGemm / QAdd outputs
// whose codes are the same everywhere on every input ("layer3.1.conv2: every output is code 0").
std::vector<std::string> find_constant_outputs(CompiledModel& q, const std::vector<std::vector<Tensor>>& inputs);

// "12 sub-byte node(s) run int8 kernels on their codes on target ...", grouped by reason.
std::string describe_subbyte_on_int8(const std::vector<SlowNode>& nodes, SlowPolicy policy, const std::string& target);
// The widest code width among a quantized node's weights and input activations' codes, and the
// narrowest: "w4a8" for a QConv with i4 weights and u8 input; "" for other nodes.
std::string node_precision(const Graph& g, const Node& n);

struct QuantizedBuild {
  Graph graph;                           // the quantized graph (before compile's passes), for artifacts
  std::unique_ptr<CompiledModel> model;  // compiled for opts.target
  std::vector<SlowNode> slow;            // what the guard found (kept fp32 / refused / allowed)
  std::vector<SlowNode> subbyte_on_int8; // sub-byte nodes running int8 kernels on their codes
  // Below 8 bits: quantized layer outputs that hold one code over every calibration input (the
  // study's nbit=1 "9.8 ms" was such a graph, folded away); "node: ..." lines. Empty when the
  // target cannot run here.
  std::vector<std::string> constant_outputs;
  SlowPolicy policy = SlowPolicy::fp32;
};

// fp32 model -> calibrate -> quantize -> guard -> compile. `fp32` must be compiled from the same
// graph with optimisation on (its graph is the one rewritten).
QuantizedBuild build_quantized(CompiledModel& fp32, const CompileOptions& opts, QuantizeOptions qopts,
                               SlowPolicy policy);
// The same from ranges already calibrated on `fp32` (calibrate_model): building one model for
// several targets calibrates once (ResNet-50 under qemu: one fp32 inference per target was most
// of a 9-minute test).
QuantizedBuild build_quantized(CompiledModel& fp32, const std::vector<Range>& ranges, const CompileOptions& opts,
                               QuantizeOptions qopts, SlowPolicy policy);

// "3 quantized node(s) have no fast int8 kernel on target x86-64 and were kept in fp32: ..."
std::string describe_slow_nodes(const std::vector<SlowNode>& slow, SlowPolicy policy, const std::string& target);

}  // namespace lowbit
