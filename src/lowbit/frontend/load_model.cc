#include "lowbit/frontend/load_model.h"

#include <charconv>
#include <filesystem>

#include "lowbit/artifact/artifact.h"
#include "lowbit/common/error.h"
#if defined(LOWBIT_HAS_ONNX)
#include "lowbit/frontend/onnx/onnx_import.h"
#endif
#include "lowbit/frontend/zoo/zoo.h"

namespace lowbit {

Graph load_model(const std::string& spec, const std::map<std::string, Shape>& input_shapes) {
  if (is_zoo_model(spec)) {
    Graph g = build_zoo_model(spec);
    for (auto& [name, shape] : input_shapes) {
      bool found = false;
      for (ValueId v : g.inputs)
        if (g.value(v).name == name) {
          g.value(v).shape = shape;
          found = true;
        }
      if (!found) throw Error("--input-shape names '" + name + "', but zoo model " + spec + " has input 'input'");
    }
    return g;
  }
  if (std::filesystem::exists(spec)) {
    if (is_artifact_file(spec)) {
      if (!input_shapes.empty()) throw Error("--input-shape cannot change a compiled artifact's shapes");
      return load_artifact(spec).graph;
    }
#if defined(LOWBIT_HAS_ONNX)
    return import_onnx_file(spec, input_shapes);
#else
    throw Error("cannot load '" + spec + "': this lowbit was built without ONNX support (LOWBIT_WITH_ONNX=OFF)");
#endif
  }
  std::string names;
  for (auto& n : zoo_model_names()) names += " " + n;
  throw Error("model '" + spec + "' is neither a file nor a zoo model (zoo:" + names + ")");
}

Graph load_model_bytes(const std::string& bytes, const std::map<std::string, Shape>& input_shapes,
                       const std::string& origin) {
#if defined(LOWBIT_HAS_ONNX)
  return import_onnx_bytes(bytes, input_shapes, origin);
#else
  throw Error("cannot load '" + origin + "': this lowbit was built without ONNX support (LOWBIT_WITH_ONNX=OFF)");
#endif
}

std::pair<std::string, Shape> parse_input_shape(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw Error("input shape '" + text + "' must look like name=1x3x224x224");
  Shape s;
  const std::string dims = text.substr(eq + 1);
  size_t pos = 0;
  while (pos <= dims.size()) {
    size_t x = dims.find('x', pos);
    const std::string d = dims.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
    // Validation refuses shapes whose element count overflows; a dimension that does not fit in
    // 64 bits is refused here, not left to throw out of the parser.
    if (d.empty() || ec != std::errc() || end != d.data() + d.size() || v < 1)
      throw Error("input shape '" + text + "': '" + d + "' is not a positive dimension");
    s.push_back(v);
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  return {text.substr(0, eq), s};
}

}  // namespace lowbit
