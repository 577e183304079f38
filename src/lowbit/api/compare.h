#pragma once
// What quantization cost, measured: a quantized model against its fp32 original (and, below 8
// bits, against int8) on the same inputs: output cosine, relative L2 and top-1/top-5 agreement, and
// every quantized activation's SQNR against the fp32 tensor of the same name (which layer lost the
// signal). `lowbit compare` prints it; embedding programs read the struct or its JSON.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lowbit/api/build.h"

namespace lowbit {

struct OutputAgreement {
  double cosine_mean = 0, cosine_min = 1, rel_l2_mean = 0;
  double top1 = 0, top5 = 0;  // fractions of the inputs whose fp32 best class the model keeps
};

struct LayerSqnr {
  std::string value, op;  // the quantized activation and the op that produced it
  double sqnr_db = 0;     // 10 log10(signal / noise); 999 when exact
};

struct Comparison {
  int inputs = 0;
  OutputAgreement vs_fp32;
  bool has_vs_int8 = false;
  OutputAgreement vs_int8;        // when an int8 build was given (sub-byte precisions)
  std::vector<LayerSqnr> layers;  // lowest SQNR first
};

// The first output of `q` against the first output of `fp32` (and of `int8` when given) on each
// input; per-layer SQNR from the u8 activations of `q` whose names the fp32 graph also has.
Comparison compare_models(const BuiltModel& fp32, const BuiltModel& q, const BuiltModel* int8,
                          const std::vector<std::vector<Tensor>>& inputs);

nlohmann::json comparison_json(const Comparison& c);

}  // namespace lowbit
