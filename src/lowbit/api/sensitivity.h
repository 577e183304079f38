#pragma once
// Which layers can take a narrower precision, measured: every quantizable layer (Conv, Gemm, with
// the activation that follows it) quantized on its own at each precision asked while the rest of
// the model stays fp32, and what that does to the model's output (cosine, relative L2, top-1
// agreement against fp32 on evaluation inputs), beside the layer's own output SQNR, its weight
// bytes and its time on the target at that precision. The time is the layer's step in the model
// quantized throughout at that precision (the inputs and outputs it would really have; a layer
// alone in int8 would also pay a quantize and a dequantize) with the guard set aside
// (--on-slow=allow: each precision's own kernels are what is measured), and the damage is the
// model's.
// `lowbit sensitivity` prints the table ranked by damage per byte or per millisecond saved, which
// is what a mixed-precision choice needs: the cheapest accuracy to spend for each saving.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lowbit/api/build.h"
#include "lowbit/api/compare.h"

namespace lowbit {

struct SensitivityOptions {
  std::vector<Precision> precisions;            // each quantized (int8, w4a8, ...)
  std::vector<std::vector<Tensor>> eval_inputs;  // empty: eval_samples seeded synthetic ones
  int eval_samples = 8;
  int timing_runs = 5;  // per precision: the median of each step's time over these runs
  float mask_threshold = kDefaultMaskThreshold;  // for the outputs' mask IoU (api/compare.h)
};

struct LayerAt {
  std::string precision;
  // The model's first output with only this layer (and its activation) quantized, against fp32.
  double cosine = 1, rel_l2 = 0, top1 = 1, mask_iou = 1;
  double sqnr_db = 0;        // the layer's own quantized output against fp32 (999: exact)
  int64_t weight_bytes = 0;  // weights and bias as stored at this precision
  double ms = 0;             // the layer's steps, model quantized throughout at this precision
                             // (0 when the target cannot run on this host)
  std::string kernel;        // the kernel that ran it there
  std::string error;         // why the layer could not be measured at this precision (else empty)
};

struct LayerSensitivity {
  std::string node, op;
  int64_t macs = 0;
  int64_t fp32_weight_bytes = 0;
  double fp32_ms = 0;
  std::vector<LayerAt> at;  // in SensitivityOptions::precisions order
};

struct Sensitivity {
  std::string model, target;
  int eval_inputs = 0;
  std::vector<std::string> precisions;
  std::vector<LayerSensitivity> layers;  // graph order
};

// `o` names the model (an fp32 .onnx or zoo name), the target, the calibration (method, samples)
// and the quantizer's options; o.precision is ignored (each of s.precisions is measured).
Sensitivity analyze_sensitivity(const BuildOptions& o, const SensitivityOptions& s);

// One (layer, precision) choice and what it costs and saves against fp32. damage = 1 - cosine.
struct SensitivityChoice {
  const LayerSensitivity* layer;
  const LayerAt* at;
  double damage, bytes_saved, ms_saved;
};
enum class SensitivityRank { per_byte, per_ms };
// Every measured choice that saves something (bytes, or milliseconds for per_ms), least damage per unit
// saved first; then the choices that save nothing, least damage first.
std::vector<SensitivityChoice> rank_choices(const Sensitivity& s, SensitivityRank by);

nlohmann::json sensitivity_json(const Sensitivity& s);

}  // namespace lowbit
