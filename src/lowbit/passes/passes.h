#pragma once
// Graph passes, in the order compile() runs them. Each keeps the graph valid and topologically
// sorted; each returns how many rewrites it made (reported by `inspect`).
#include <cstdint>
#include <vector>

#include "lowbit/ir/graph.h"

namespace lowbit {

// Validates every node (the one validation layer, ir/op_schema.h) and evaluates nodes whose
// inputs are all constant, so exporters' shape subgraphs (Shape, Gather, Concat, ...) fold
// away once input shapes are fixed. Validation and folding interleave because a node's shape
// can depend on a folded value (Reshape's shape input).
int validate_and_fold_constants(Graph& g);

// ConvTranspose with kernel = stride (no overlapping taps, no padding, group 1) becomes a 1x1
// Conv with M k^2 channels and DepthToSpace (CRD) (passes/lower_conv_transpose.cc).
int lower_conv_transpose(Graph& g);

// Conv -> BatchNormalization with constant parameters becomes one Conv with scaled weights and
// a new bias; also Conv -> DepthToSpace (CRD) -> BatchNormalization (a lowered ConvTranspose),
// each BN channel scaling its block of conv channels.
int fold_batch_norm(Graph& g);

// Sign / BipolarQuant -> Conv with +-alpha weights per channel becomes BinaryConv (after BN
// folding; passes/binarize.cc).
int binarize_convs(Graph& g);

// A BinaryConv whose every reader takes only the sign of its output (binary convs, max pools
// between them) writes packed signs (b1, ir/codes.h) through one threshold per channel; the
// readers then read bits. After fuse_epilogues (a fused residual or clamp keeps the real output).
int pack_binary_chains(Graph& g);

// Identity and Dropout (inference) disappear, and so does a Pad of zero on every side (PyTorch
// exports one before each DenseNet transition's AveragePool); their consumers read the input
// directly.
int remove_identities(Graph& g);

// Mul(x, Sigmoid(x)) becomes SiLU(x) (lowbit's op; the Sigmoid read only by that Mul).
int fuse_silu(Graph& g);

// x * Clip(x + 3, 0, 6) / 6 and x * HardSigmoid(x; 1/6, 0.5) become HardSwish(x).
int fuse_hardswish(Graph& g);

// Conv -> Mul / Add (either side) or Sub / Div (the conv on the left) by a one-element or
// per-output-channel constant: folded into the conv's weights and bias.
int fold_conv_affine(Graph& g);

// Conv + Add(residual) + Relu/Clip, Gemm + Relu/Clip and (inference) BatchNormalization +
// Relu/Clip become one node with a fused epilogue
// (attributes act_min/act_max, Conv input 3 = residual); an fp32 Conv then takes the activation
// after it (SiLU, HardSwish, ...: the ops whose schema says conv_post_op) as attribute post_op.
int fuse_epilogues(Graph& g, bool post_ops = true);

// Concat without copies (passes/concat_in_place.cc): a Concat whose inputs are contiguous slices
// of its output (every output dim before the axis is 1: batch-1 channel concats) gets attribute
// in_place when every input can be written by its producer straight into its slice: runtime
// values of a whole-byte dtype, not graph inputs, at offsets that are multiples of `alignment`,
// and no two written values sharing bytes. The memory plan then gives the Concat's output and
// inputs one buffer, and the Concat runs no kernel (x-concat-in-place). Decided afresh each time.
int mark_concats_in_place(Graph& g, int64_t alignment = 64);
bool concat_in_place(const Node& n);
inline constexpr const char* kConcatInPlaceAttr = "in_place";  // a memory-plan hint, not ONNX

// Values that share one buffer: per value, the value whose buffer it lives in (itself when none)
// and its byte offset there. Throws naming the node when a Concat marked in_place cannot be placed
// so (a hand-edited or corrupt artifact): a copy the kernel skips would leave its output unwritten.
struct BufferAliases {
  std::vector<ValueId> root;
  std::vector<int64_t> offset;
};
BufferAliases concat_aliases(const Graph& g, int64_t alignment = 64);

// Static memory plan: one arena, each runtime value at an offset; values whose lifetimes do not
// overlap share bytes. Lifetimes are in node order. Values a Concat in place joins (above) are one
// buffer, live from the first member's producer to the last member's last reader.
struct MemoryPlan {
  std::vector<int64_t> offset;  // per value; -1 for constants and unused values
  int64_t arena_bytes = 0;
};
MemoryPlan plan_memory(const Graph& g, int64_t alignment = 64);

}  // namespace lowbit
