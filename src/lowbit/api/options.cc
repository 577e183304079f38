#include "lowbit/api/options.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "lowbit/common/error.h"
#include "lowbit/frontend/load_model.h"

namespace lowbit {
namespace {

int parse_int(const std::string& key, const std::string& v, int lo, int hi) {
  int x = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size() || x < lo || x > hi)
    throw Error("option '" + key + "': expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                "], got '" + v + "'");
  return x;
}

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "1" || v == "true" || v == "on" || v == "yes") return true;
  if (v == "0" || v == "false" || v == "off" || v == "no") return false;
  throw Error("option '" + key + "': expected true or false, got '" + v + "'");
}

std::array<float, 3> parse_rgb(const std::string& key, const std::string& v) {
  std::array<float, 3> r{};
  std::istringstream in(v);
  std::string part;
  size_t n = 0;
  while (std::getline(in, part, ',')) {
    if (n == 3) break;
    try {
      size_t used = 0;
      r[n] = std::stof(part, &used);
      if (used != part.size()) throw std::invalid_argument(part);
    } catch (const std::exception&) {
      throw Error("option '" + key + "': '" + part + "' is not a number");
    }
    ++n;
  }
  if (n != 3 || in.rdbuf()->in_avail() > 0) throw Error("option '" + key + "': expected three values R,G,B, got '" + v + "'");
  return r;
}

}  // namespace

const std::vector<std::string>& build_option_keys() {
  static const std::vector<std::string> keys = {
      "precision", "target", "threads",  "input_shape", "calibration", "calibration_samples", "calibration_folder",
      "mean",      "std",    "resize",   "on_slow",     "keep_8bit",   "mode",                "weight_scale",
      "group_size", "optimize", "autotune", "max_memory", "layer_precision", "rounding", "equalize"};
  return keys;
}

void set_build_option(BuildOptions& o, const std::string& key, const std::string& v) {
  if (key == "precision") {
    o.precision = parse_precision(v);
  } else if (key == "target") {
    if (v.empty() || v == "host") o.target.reset();
    else o.target = parse_target(v);
  } else if (key == "threads") {
    o.compile.threads = parse_int(key, v, 0, 4096);
  } else if (key == "input_shape") {
    auto [name, shape] = parse_input_shape(v);
    o.input_shapes[name] = shape;
  } else if (key == "calibration") {
    o.quantize.method = parse_calibration_method(v);
  } else if (key == "calibration_samples") {
    o.quantize.synthetic_samples = parse_int(key, v, 1, 1 << 20);
  } else if (key == "calibration_folder") {
    o.calibration_folder = v;
  } else if (key == "mean") {
    o.preprocess.mean = parse_rgb(key, v);
  } else if (key == "std") {
    o.preprocess.std = parse_rgb(key, v);
  } else if (key == "resize") {
    o.preprocess.resize = parse_resize_mode(v);
  } else if (key == "on_slow") {
    o.on_slow = parse_slow_policy(v);
  } else if (key == "keep_8bit") {
    o.quantize.keep_8bit = parse_keep_8bit(v);
  } else if (key == "layer_precision") {
    o.quantize.layer_precision = parse_layer_precisions(v);
  } else if (key == "rounding") {
    o.quantize.rounding = parse_rounding(v);
  } else if (key == "equalize") {
    o.quantize.equalize = parse_bool(key, v);
  } else if (key == "mode") {
    o.quantize.mode = parse_storage_mode(v);
  } else if (key == "weight_scale") {
    o.quantize.weight_scale = parse_weight_scale(v);
  } else if (key == "group_size") {
    o.quantize.group_size = parse_int(key, v, 0, 1 << 20);
  } else if (key == "optimize") {
    o.compile.optimize = parse_bool(key, v);
  } else if (key == "autotune") {
    o.compile.autotune = parse_bool(key, v);
  } else if (key == "max_memory") {
    o.compile.max_memory = parse_memory_size(v);
    if (o.compile.max_memory <= 0) throw Error("option 'max_memory': expected a size: 16G, 512M or bytes, got '" + v + "'");
  } else {
    std::string known;
    for (const std::string& k : build_option_keys()) known += (known.empty() ? "" : ", ") + k;
    throw Error("unknown option '" + key + "' (the options: " + known + ")");
  }
}

}  // namespace lowbit
