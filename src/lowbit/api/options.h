#pragma once
// Build options by name, for front ends that pass them as strings: the C API's
// lowbit_options_set and the Python package's keyword arguments use the same keys, so a key means
// the same thing in every binding and the CLI's flags map onto them one to one.
#include <string>
#include <vector>

#include "lowbit/api/build.h"

namespace lowbit {

// Sets one option from its text. Throws lowbit::Error naming the key (and the accepted values)
// when the key is unknown or the value malformed. Keys:
//   precision           fp32 | int8 | w4a8 | w4a4 | w2a8 | w1a1 ... (quant/precision.h)
//   target              host | a named target (`lowbit targets`) | x86-64+avx2+fma
//   threads             0 (all cores) or a count
//   input_shape         name=1x3x224x224 (repeatable: one input per call)
//   calibration         minmax | percentile | entropy | mse | auto (quant/calibration.h)
//   calibration_samples synthetic samples when no data is given
//   calibration_folder  a folder of .npy / PNG / JPEG files, one per sample
//   mean, std           image normalisation: three values R,G,B
//   resize              stretch | pad
//   on_slow             fp32 | error | allow
//   keep_8bit, mode, weight_scale, group_size, rounding   sub-byte options (quant/quantize.h)
//   equalize            true | false: cross-layer equalization where it measures better (quant/equalize.h)
//   optimize, autotune  true | false
//   max_memory          16G, 512M or bytes
void set_build_option(BuildOptions& o, const std::string& key, const std::string& value);

// The keys set_build_option accepts, in the order above.
const std::vector<std::string>& build_option_keys();

}  // namespace lowbit
