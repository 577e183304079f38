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
  }
}

}  // namespace lowbit
