#pragma once
// Interop with ONNX models that are already quantized: the QDQ form (QuantizeLinear /
// DequantizeLinear around float ops, as ONNX Runtime's quantize_static and PyTorch emit) and the
// QOperator form (QLinearConv, QLinearMatMul). fuse_qdq rewrites what it can convert exactly into
// lowbit's QConv / QGemm / QAdd (notes/quant_ir.md) so that it runs on the int8 kernels.
#include <string>
#include <vector>

#include "lowbit/ir/graph.h"

namespace lowbit {

// Attribute set on an op that looks quantized (its inputs are dequantized) but was left as is:
// the reason, e.g. "weights: zero point 3 leaves values outside i8". The op still runs correctly
// through the fp32 / reference kernels.
inline constexpr const char* kQdqUnfusedAttr = "qdq_unfused";

struct QdqNote {
  std::string node;    // label of the op left as is
  std::string reason;  // why it was not converted
};

struct QdqStats {
  int rewrites = 0;            // i8->u8 flips, DQ sinks, Q(DQ) removals and fusions
  int fused = 0;               // QConv / QGemm / QAdd created
  std::vector<QdqNote> unfused;
};

// Must run before constant folding (which would turn DequantizeLinear(i8 weights) into fp32
// weights). A no-op (returns 0 without touching the graph) for graphs without QuantizeLinear,
// DequantizeLinear, QLinearConv or QLinearMatMul, and for graphs lowbit quantized itself (they
// hold QConv / QGemm / QAdd already). Ops left as is are reported on stderr with their reasons
// (as the guard reports slow nodes); LOWBIT_VERBOSE containing "qdq" adds the rewrite counts.
int fuse_qdq(Graph& g, QdqStats* stats = nullptr);

}  // namespace lowbit
