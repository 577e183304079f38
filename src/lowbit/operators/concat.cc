#include "lowbit/operators/concat.h"

#include "lowbit/passes/passes.h"

namespace lowbit {
namespace {

class ConcatInPlace final : public Kernel {
 public:
  void run(std::span<const TensorView>, std::span<const TensorView>, ThreadPool&) const override {}
};

}  // namespace

std::string check_concat_in_place(const NodeContext& ctx) {
  if (concat_in_place(ctx.node)) return "";
  return "its inputs are not placed in its output's buffer (the memory plan places a Concat when every "
         "dim before the axis is 1, inputs are whole-byte values written by nodes at 64-byte-aligned "
         "slices, and no input already sits elsewhere in another Concat)";
}

std::unique_ptr<Kernel> create_concat_in_place(const NodeContext&) { return std::make_unique<ConcatInPlace>(); }

}  // namespace lowbit
