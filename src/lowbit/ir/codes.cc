#include "lowbit/ir/codes.h"

#include <string>

#include "lowbit/common/error.h"

namespace lowbit {

Tensor convert_codes(const Tensor& t, DType to) {
  if (!is_code_dtype(t.dtype()) || !is_code_dtype(to))
    throw Error(std::string("cannot convert ") + dtype_name(t.dtype()) + " codes to " + dtype_name(to));
  if (t.dtype() == to) return t;
  const DTypeInfo& d = dtype_info(to);
  Tensor out(to, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int32_t v = load_code(t.raw(), t.dtype(), i);
    if (v < d.qmin || v > d.qmax || (to == DType::b1 && v == 0))
      throw Error("code " + std::to_string(v) + " at element " + std::to_string(i) + " does not fit " + d.name);
    store_code(out.raw(), to, i, v);
  }
  return out;
}

}  // namespace lowbit
