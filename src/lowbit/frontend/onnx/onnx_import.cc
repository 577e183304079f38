#include "lowbit/frontend/onnx/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "lowbit/common/error.h"
#include "lowbit/frontend/onnx/onnx_tensor.h"
#include "lowbit/ir/op_schema.h"

namespace lowbit {
namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) r += (i ? sep : "") + v[i];
  return r;
}

Tensor ints_tensor(const std::vector<int64_t>& v) {
  Tensor t(DType::i64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

Tensor scalar_f32(float x) {
  Tensor t(DType::f32, {});
  t.data<float>()[0] = x;
  return t;
}

class Importer {
 public:
  Importer(const onnx::ModelProto& m, const std::map<std::string, Shape>& input_shapes, ExternalDataDir* external)
      : m_(m), gp_(m.graph()), input_shapes_(input_shapes), external_(external) {}

  Graph run() {
    read_opset();
    g_.name = gp_.name();
    if (gp_.sparse_initializer_size() > 0)
      throw Error("sparse initializers are unsupported ('" + gp_.sparse_initializer(0).values().name() + "')");
    for (const auto& init : gp_.initializer()) {
      Tensor t;
      try {
        t = tensor_from_onnx(init, external_);
      } catch (const Error& e) {
        throw Error("initializer '" + init.name() + "': " + e.what());
      }
      define(init.name(), g_.add_constant(init.name(), std::move(t)), "initializer");
    }
    add_inputs();
    for (int i = 0; i < gp_.node_size(); ++i) {
      const auto& np = gp_.node(i);
      for (const auto& out : np.output())
        if (!out.empty()) define(out, g_.add_value(out), "node " + node_label(np, i));
    }
    std::vector<std::string> unsupported;
    for (int i = 0; i < gp_.node_size(); ++i) {
      Node n = convert_node(gp_.node(i), i);
      if (!find_schema(n.op)) unsupported.push_back(n.op + " (node '" + n.name + "')");
      g_.nodes.push_back(std::move(n));
    }
    if (!unsupported.empty())
      throw Error("unsupported op" + std::string(unsupported.size() > 1 ? "s: " : ": ") + join(unsupported, ", ") +
                  " (see `lowbit ops` for the supported list)");
    add_outputs();
    g_.topo_sort();
    return std::move(g_);
  }

 private:
  void read_opset() {
    bool found = false;
    for (const auto& os : m_.opset_import()) {
      if (os.domain().empty() || os.domain() == "ai.onnx") {
        opset_ = static_cast<int>(os.version());
        found = true;
      }
    }
    if (!found) throw Error("the model imports no opset of the default ONNX domain");
    if (opset_ < kMinOnnxOpset)
      throw Error("the model uses opset " + std::to_string(opset_) + " of the default domain; lowbit imports opsets " +
                  std::to_string(kMinOnnxOpset) + ".." + std::to_string(kMaxOnnxOpset) +
                  " (upgrade it with onnx.version_converter.convert_version(model, 13))");
    if (opset_ > kMaxOnnxOpset)
      throw Error("the model uses opset " + std::to_string(opset_) + " of the default domain; lowbit imports opsets " +
                  std::to_string(kMinOnnxOpset) + ".." + std::to_string(kMaxOnnxOpset) +
                  " (re-export it with opset_version <= " + std::to_string(kMaxOnnxOpset) + ")");
  }

  static std::string node_label(const onnx::NodeProto& np, int index) {
    return "'" + (np.name().empty() ? np.op_type() + "_" + std::to_string(index) : np.name()) + "' (" + np.op_type() +
           ")";
  }

  void define(const std::string& name, ValueId id, const std::string& by) {
    if (name.empty()) throw Error(by + " defines a value with an empty name");
    auto [it, inserted] = ids_.emplace(name, id);
    if (!inserted) throw Error("value '" + name + "' is defined twice (again by " + by + ")");
  }

  std::string fresh_name(const std::string& base) {
    std::string n = base;
    for (int i = 1; ids_.count(n); ++i) n = base + "_" + std::to_string(i);
    return n;
  }

  void add_inputs() {
    std::vector<std::string> runtime_names;
    for (const auto& vi : gp_.input())
      if (!ids_.count(vi.name())) runtime_names.push_back(vi.name());
    for (const auto& [name, shape] : input_shapes_) {
      bool known = false;
      for (const auto& r : runtime_names) known |= r == name;
      if (!known)
        throw Error("--input-shape names '" + name + "', which is not an input of the model; its inputs are: " +
                    (runtime_names.empty() ? std::string("(none)") : join(runtime_names, ", ")));
    }
    for (const auto& vi : gp_.input()) {
      if (ids_.count(vi.name())) continue;  // also an initializer: a constant, not a runtime input
      const std::string& name = vi.name();
      if (!vi.type().has_tensor_type())
        throw Error("graph input '" + name + "' is not a tensor (sequence/map/optional inputs are unsupported)");
      const auto& tt = vi.type().tensor_type();
      auto dt = dtype_from_onnx(tt.elem_type());
      if (!dt)
        throw Error("graph input '" + name + "' has element type " + onnx_dtype_name(tt.elem_type()) +
                    ", which lowbit does not support");
      Shape shape;
      bool all_known = tt.has_shape();
      if (tt.has_shape()) {
        for (const auto& d : tt.shape().dim()) {
          if (d.has_dim_value() && d.dim_value() >= 0) {
            shape.push_back(d.dim_value());
          } else {
            shape.push_back(-1);
            all_known = false;
          }
        }
      }
      auto fixed = input_shapes_.find(name);
      if (fixed != input_shapes_.end()) {
        const Shape& want = fixed->second;
        if (tt.has_shape() && want.size() != shape.size())
          throw Error("--input-shape " + name + "=" + shape_str(want) + " has rank " + std::to_string(want.size()) +
                      " but the model declares input '" + name + "' with rank " + std::to_string(shape.size()) + " (" +
                      dims_str(shape) + ")");
        for (size_t i = 0; i < want.size(); ++i) {
          if (want[i] < 0)
            throw Error("--input-shape " + name + "=" + shape_str(want) + ": dimensions must not be negative");
          if (tt.has_shape() && shape[i] >= 0 && shape[i] != want[i])
            throw Error("--input-shape " + name + "=" + shape_str(want) + " conflicts with the model's declared shape " +
                        dims_str(shape) + " at dimension " + std::to_string(i));
        }
        shape = want;
        all_known = true;
      }
      ValueId id = g_.add_value(name, *dt, shape, all_known);
      define(name, id, "graph input");
      g_.inputs.push_back(id);
    }
  }

  static std::string dims_str(const Shape& s) {
    if (s.empty()) return "scalar";
    std::string r;
    for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + (s[i] < 0 ? std::string("?") : std::to_string(s[i]));
    return r;
  }

  void add_outputs() {
    if (gp_.output_size() == 0) throw Error("the graph has no outputs");
    for (const auto& vi : gp_.output()) {
      auto it = ids_.find(vi.name());
      if (it == ids_.end())
        throw Error("graph output '" + vi.name() + "' is not produced by any node, input or initializer");
      ValueId id = it->second;
      if (vi.type().has_tensor_type() && vi.type().tensor_type().elem_type() != onnx::TensorProto::UNDEFINED) {
        int et = vi.type().tensor_type().elem_type();
        auto dt = dtype_from_onnx(et);
        if (!dt)
          throw Error("graph output '" + vi.name() + "' has element type " + onnx_dtype_name(et) +
                      ", which lowbit does not support");
        Value& v = g_.value(id);
        if (!v.constant && std::find(g_.inputs.begin(), g_.inputs.end(), id) == g_.inputs.end()) v.dtype = *dt;
      } else if (vi.type().has_sequence_type() || vi.type().has_optional_type() || vi.type().has_map_type()) {
        throw Error("graph output '" + vi.name() + "' is not a tensor (sequence/map/optional outputs are unsupported)");
      }
      g_.outputs.push_back(id);
    }
  }

  AttrValue convert_attr(const onnx::AttributeProto& a, const std::string& label) {
    using A = onnx::AttributeProto;
    int type = a.type();
    if (type == A::UNDEFINED) {  // very old exporters leave the type unset: infer it from the field present
      if (a.has_f()) type = A::FLOAT;
      else if (a.has_i()) type = A::INT;
      else if (a.has_s()) type = A::STRING;
      else if (a.has_t()) type = A::TENSOR;
      else if (a.has_g() || a.graphs_size()) type = A::GRAPH;
      else if (a.floats_size()) type = A::FLOATS;
      else if (a.ints_size()) type = A::INTS;
      else if (a.strings_size()) type = A::STRINGS;
    }
    switch (type) {
      case A::INT: return static_cast<int64_t>(a.i());
      case A::FLOAT: return a.f();
      case A::STRING: return a.s();
      case A::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
      case A::FLOATS: return std::vector<float>(a.floats().begin(), a.floats().end());
      case A::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
      case A::TENSOR:
        try {
          return tensor_from_onnx(a.t(), external_);
        } catch (const Error& e) {
          throw Error("node " + label + ": attribute '" + a.name() + "': " + e.what());
        }
      case A::GRAPH: case A::GRAPHS:
        throw Error("node " + label + ": subgraphs are unsupported (attribute '" + a.name() + "')");
      default:
        throw Error("node " + label + ": attribute '" + a.name() + "' has kind " +
                    A::AttributeType_Name(static_cast<A::AttributeType>(type)) + ", which lowbit does not support");
    }
  }

  // Binds a constant built from an old-opset attribute as input `index` of `n`.
  void set_const_input(Node& n, size_t index, Tensor t, const std::string& what) {
    if (n.inputs.size() <= index) n.inputs.resize(index + 1, kNoValue);
    std::string name = fresh_name(n.name + "_" + what);
    ValueId id = g_.add_constant(name, std::move(t));
    define(name, id, "node '" + n.name + "'");
    n.inputs[index] = id;
  }

  void move_ints_attr_to_input(Node& n, const std::string& attr, size_t index) {
    if (!n.attrs.has(attr)) return;
    auto v = n.attrs.get_ints(attr);
    n.attrs.erase(attr);
    set_const_input(n, index, ints_tensor(v), attr);
  }

  // Rewrites older op versions into the canonical (opset-17) forms.
  void normalise(Node& n) {
    const std::string& op = n.op;
    if (op == "Clip" && opset_ < 11) {
      if (n.attrs.has("min")) set_const_input(n, 1, scalar_f32(n.attrs.get_float("min", 0)), "min");
      if (n.attrs.has("max")) set_const_input(n, 2, scalar_f32(n.attrs.get_float("max", 0)), "max");
      n.attrs.erase("min");
      n.attrs.erase("max");
    } else if (op == "Pad" && opset_ < 11) {
      move_ints_attr_to_input(n, "pads", 1);
      if (n.attrs.has("value")) {
        float v = n.attrs.get_float("value", 0);
        n.attrs.erase("value");
        set_const_input(n, 2, scalar_f32(v), "value");
      }
    } else if (op == "Split" && opset_ < 13) {
      move_ints_attr_to_input(n, "split", 1);
    } else if ((op == "Squeeze" || op == "Unsqueeze") && opset_ < 13) {
      move_ints_attr_to_input(n, "axes", 1);
    } else if (op == "Slice" && opset_ < 10) {
      // Slice-1: starts/ends/axes attributes; since Slice-10 they are inputs 1..3.
      auto starts = n.attrs.get_ints("starts"), ends = n.attrs.get_ints("ends");
      bool has_axes = n.attrs.has("axes");
      auto axes = n.attrs.get_ints("axes");
      n.attrs.erase("starts");
      n.attrs.erase("ends");
      n.attrs.erase("axes");
      set_const_input(n, 1, ints_tensor(starts), "starts");
      set_const_input(n, 2, ints_tensor(ends), "ends");
      if (has_axes) set_const_input(n, 3, ints_tensor(axes), "axes");
    } else if (op == "Upsample" || (op == "Resize" && opset_ < 11)) {
      // Upsample-9 / Resize-10: (X, scales) with asymmetric coordinates and floor rounding;
      // Resize-11+ spells that as (X, roi, scales) plus explicit modes.
      ValueId x = Graph::input_or_none(n, 0), scales = Graph::input_or_none(n, 1);
      n.op = "Resize";
      n.inputs = {x, kNoValue, scales};
      std::string mode = n.attrs.get_string("mode", "nearest");
      if (mode == "bilinear") mode = "linear";
      n.attrs.set("mode", mode);
      n.attrs.set("coordinate_transformation_mode", std::string("asymmetric"));
      if (mode == "nearest") n.attrs.set("nearest_mode", std::string("floor"));
    } else if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset_ < 13) {
      n.attrs.set("axis", n.attrs.get_int("axis", 1));
      n.attrs.set("coerce_2d", int64_t{1});
    } else if (op == "BatchNormalization") {
      n.attrs.erase("spatial");
      n.attrs.erase("is_test");
      n.attrs.erase("consumed_inputs");
    }
    if (n.op == "Resize") {
      // Resize-11 requires roi/scales inputs and uses empty tensors to mean "absent".
      for (size_t i = 1; i < 3 && i < n.inputs.size(); ++i)
        if (const Tensor* t = g_.constant(n.inputs[i]); t && t->numel() == 0) n.inputs[i] = kNoValue;
    }
    while (!n.inputs.empty() && n.inputs.back() == kNoValue) n.inputs.pop_back();
  }

  Node convert_node(const onnx::NodeProto& np, int index) {
    Node n;
    n.op = np.op_type();
    n.name = np.name().empty() ? np.op_type() + "_" + std::to_string(index) : np.name();
    const std::string label = n.label();
    // QONNX's binary quantizer (and FINN's older name for its domain) is the one custom op taken:
    // binary models (Brevitas, FINN) mark their +-1 weights and activations with it.
    const bool qonnx = np.domain() == "qonnx.custom_op.general" || np.domain() == "finn.custom_op.general";
    if (qonnx && n.op != "BipolarQuant")
      throw Error("node " + label + ": QONNX op '" + n.op + "' is unsupported (lowbit imports BipolarQuant only)");
    if (!np.domain().empty() && np.domain() != "ai.onnx" && !qonnx)
      throw Error("node " + label + ": domain '" + np.domain() +
                  "' is unsupported (lowbit imports the default ONNX domain and QONNX BipolarQuant)");
    for (const auto& a : np.attribute()) n.attrs.set(a.name(), convert_attr(a, label));
    for (const auto& in : np.input()) {
      if (in.empty()) {
        n.inputs.push_back(kNoValue);
        continue;
      }
      auto it = ids_.find(in);
      if (it == ids_.end())
        throw Error("node " + label + ": input '" + in +
                    "' is not defined (no node, graph input or initializer produces it)");
      n.inputs.push_back(it->second);
    }
    for (const auto& out : np.output()) n.outputs.push_back(out.empty() ? kNoValue : ids_.at(out));
    while (!n.outputs.empty() && n.outputs.back() == kNoValue) n.outputs.pop_back();
    if (n.outputs.empty()) throw Error("node " + label + " has no outputs");
    normalise(n);
    return n;
  }

  const onnx::ModelProto& m_;
  const onnx::GraphProto& gp_;
  const std::map<std::string, Shape>& input_shapes_;
  ExternalDataDir* external_;  // null: a model given as bytes, which has no folder
  Graph g_;
  int opset_ = 0;
  std::unordered_map<std::string, ValueId> ids_;
};

// The graph against `lim` (onnx_import.h), before anything is built from it.
void check_limits(const onnx::GraphProto& g, const OnnxLimits& lim) {
  auto over = [](const std::string& what, int64_t n, int64_t cap) {
    if (n > cap)
      throw Error(what + ": " + std::to_string(n) + ", over the importer's limit of " + std::to_string(cap) +
                  " (OnnxLimits in frontend/onnx/onnx_import.h)");
  };
  over("nodes", g.node_size(), lim.max_nodes);
  over("initializers", g.initializer_size(), lim.max_initializers);
  over("graph inputs", g.input_size(), lim.max_graph_io);
  over("graph outputs", g.output_size(), lim.max_graph_io);
  over("value_info entries", g.value_info_size(), lim.max_graph_io);
  auto rank_of = [&](const onnx::ValueInfoProto& vi, const char* kind) {
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape())
      over(std::string(kind) + " '" + vi.name() + "' rank", vi.type().tensor_type().shape().dim_size(), lim.max_rank);
  };
  for (const auto& vi : g.input()) rank_of(vi, "graph input");
  for (const auto& vi : g.output()) rank_of(vi, "graph output");
  for (const auto& vi : g.value_info()) rank_of(vi, "value_info");
  for (const auto& t : g.initializer()) over("initializer '" + t.name() + "' rank", t.dims_size(), lim.max_rank);
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    const std::string label =
        "node '" + (n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name()) + "' (" + n.op_type() + ")";
    over(label + " inputs", n.input_size(), lim.max_node_io);
    over(label + " outputs", n.output_size(), lim.max_node_io);
    for (const auto& a : n.attribute()) {
      const std::string an = label + " attribute '" + a.name() + "'";
      over(an + " values", std::max({a.ints_size(), a.floats_size(), a.strings_size()}), lim.max_attribute_values);
      if (a.has_t()) over(an + " tensor rank", a.t().dims_size(), lim.max_rank);
    }
  }
}

}  // namespace

static Graph import_onnx(const std::string& bytes, const std::map<std::string, Shape>& input_shapes,
                         const std::string& origin, ExternalDataDir* external, const OnnxLimits& limits) {
  const std::string what = "ONNX model '" + origin + "'";
  if (bytes.empty()) throw Error("cannot parse " + what + ": the file is empty");
  onnx::ModelProto m;
  // A truncated or random file usually fails to parse, but protobuf accepts some garbage as a
  // partial message, hence the structural checks that follow.
  if (!m.ParseFromString(bytes)) throw Error("cannot parse " + what + ": not a valid ModelProto (truncated or corrupt)");
  if (!m.has_graph())
    throw Error("cannot parse " + what + ": not a valid ModelProto (truncated or corrupt): it contains no graph");
  if (m.graph().node_size() == 0 || m.graph().output_size() == 0)
    throw Error("cannot parse " + what + ": not a valid ModelProto (truncated or corrupt): the graph has no " +
                (m.graph().node_size() == 0 ? "nodes" : "outputs"));
  try {
    check_limits(m.graph(), limits);
    return Importer(m, input_shapes, external).run();
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
}

Graph import_onnx_file(const std::string& path, const std::map<std::string, Shape>& input_shapes,
                       const OnnxLimits& limits) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error("cannot open ONNX model '" + path + "': it is a directory");
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && static_cast<int64_t>(size) > limits.max_file_bytes)
    throw Error("ONNX model '" + path + "' is " + std::to_string(size) + " bytes, over the " +
                std::to_string(limits.max_file_bytes) +
                " a protobuf file can hold: save it with its weights as external data "
                "(onnx.save_model(..., save_as_external_data=True))");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open ONNX model '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error("cannot read ONNX model '" + path + "': " + std::strerror(errno));
  ExternalDataDir external(path);
  return import_onnx(ss.str(), input_shapes, path, &external, limits);
}

Graph import_onnx_bytes(const std::string& bytes, const std::map<std::string, Shape>& input_shapes,
                        const std::string& origin, const OnnxLimits& limits) {
  if (static_cast<int64_t>(bytes.size()) > limits.max_file_bytes)
    throw Error("ONNX model '" + origin + "' is " + std::to_string(bytes.size()) + " bytes, over the limit of " +
                std::to_string(limits.max_file_bytes));
  return import_onnx(bytes, input_shapes, origin, nullptr, limits);
}

}  // namespace lowbit
