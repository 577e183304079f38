#include "lowbit/io/synthetic.h"

#include <cmath>

#include "lowbit/common/error.h"

namespace lowbit {

std::vector<Tensor> synthetic_inputs(const Graph& g, uint64_t seed) {
  uint64_t s = seed * 0x2545f4914f6cdd1dULL + 1;
  auto next = [&s] {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  auto uniform = [&] { return (static_cast<double>(next() >> 11) + 0.5) / 9007199254740992.0; };
  std::vector<Tensor> v;
  for (ValueId id : g.inputs) {
    const Value& val = g.value(id);
    Tensor t(val.dtype, val.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      double u = uniform();
      switch (val.dtype) {
        case DType::f32:
          t.data<float>()[i] = static_cast<float>(std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * uniform()));
          break;
        case DType::i64: t.data<int64_t>()[i] = static_cast<int64_t>(u * 10); break;
        case DType::i32: t.data<int32_t>()[i] = static_cast<int32_t>(u * 10); break;
        case DType::u8: t.data<uint8_t>()[i] = static_cast<uint8_t>(u * 256); break;
        case DType::boolean: t.data<uint8_t>()[i] = u < 0.5; break;
        default: throw Error("cannot make a synthetic input of dtype " + std::string(dtype_name(val.dtype)));
      }
    }
    v.push_back(std::move(t));
  }
  return v;
}

std::vector<std::vector<Tensor>> held_out_inputs(const Graph& g, int n) {
  std::vector<std::vector<Tensor>> r;
  for (int i = 0; i < n; ++i) r.push_back(synthetic_inputs(g, 50000 + static_cast<uint64_t>(i)));
  return r;
}

}  // namespace lowbit
