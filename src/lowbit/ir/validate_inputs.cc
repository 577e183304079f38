#include "lowbit/common/error.h"
#include "lowbit/ir/op_schema.h"

namespace lowbit {

void validate_graph_inputs(const Graph& g) {
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    bool dynamic = !v.shape_known;
    for (int64_t d : v.shape)
      if (d < 1) dynamic = true;
    if (dynamic) {
      std::string dims;
      for (int64_t d : v.shape) dims += (dims.empty() ? "" : "x") + (d < 1 ? std::string("?") : std::to_string(d));
      throw Error("graph input '" + v.name + "' has a dynamic shape [" + dims + "]; fix it with --input-shape " +
                  v.name + "=1x3x224x224 (your sizes)");
    }
    if (std::string why = tensor_size_problem(v.dtype, v.shape); !why.empty())
      throw Error("graph input '" + v.name + "': " + why);
  }
}

std::string tensor_size_problem(DType t, const Shape& s) {
  const int64_t n = checked_num_elements(s);
  if (n < 0) return "shape " + shape_str(s) + " has more elements than a 64-bit count holds";
  if (!tensor_fits(t, n))
    return "shape " + shape_str(s) + " (" + dtype_name(t) + ") needs " + std::to_string(n) + " elements, more than the " +
           std::to_string(kMaxTensorBytes >> 40) + " TiB lowbit allows one tensor";
  return "";
}

}  // namespace lowbit
