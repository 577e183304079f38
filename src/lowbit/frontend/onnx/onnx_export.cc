#include "lowbit/frontend/onnx/onnx_export.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <set>

#include "lowbit/common/error.h"
#include "lowbit/frontend/onnx/onnx_tensor.h"
#include "lowbit/frontend/onnx/onnx_write.h"
#include "lowbit/passes/passes.h"

namespace lowbit {
namespace {

using TP = onnx::TensorProto;


// lowbit-internal node forms that ONNX cannot express.
void check_exportable(const Graph& g, const Node& n) {
  for (const char* attr : {"act_min", "act_max", "post_op", "post_scale", "post_shift"})
    if (n.attrs.has(attr))
      throw Error("node " + n.label() + ": attribute '" + attr +
                  "' is a lowbit-internal fused activation; export the graph before passes");
  if (n.op == "Conv" && Graph::input_or_none(n, 3) != kNoValue)
    throw Error("node " + n.label() + ": the residual input is lowbit-internal; export the graph before passes");
  if (n.op == "Softmax" && n.attrs.get_int("coerce_2d", 0) != 0)
    throw Error("node " + n.label() + ": coerce_2d (opset < 13 Softmax) has no opset-13 form");
  if (n.op == "BatchNormalization" && n.attrs.get_int("training_mode", 0) != 0)
    throw Error("node " + n.label() + ": training-mode BatchNormalization cannot be exported");
  for (ValueId v : n.inputs)
    if (v != kNoValue && g.value(v).quant)
      throw Error("node " + n.label() + ": input '" + g.value(v).name +
                  "' carries quantization parameters; export the graph before quantization");
}

}  // namespace

int onnx_elem_type(DType t, const std::string& what) {
  switch (t) {
    case DType::f32: return TP::FLOAT;
    case DType::i64: return TP::INT64;
    case DType::i32: return TP::INT32;
    case DType::u8: return TP::UINT8;
    case DType::i8: return TP::INT8;
    case DType::boolean: return TP::BOOL;
    // ONNX 1.16 / opset 21 element types (Debian's libonnx predates them: plain integers). Packed
    // two per byte, element 0 in the low nibble: lowbit's i4 / u4 storage exactly.
    case DType::u4: return kOnnxUint4;
    case DType::i4: return kOnnxInt4;
    case DType::u2: return kOnnxUint2;  // opset 25
    case DType::i2: return kOnnxInt2;
    default:
      throw Error(what + ": dtype " + dtype_name(t) + " has no ONNX opset-" + std::to_string(kExportOnnxOpset) +
                  " equivalent");
  }
}

void fill_onnx_tensor(TP* out, const Tensor& t, const std::string& name, const std::string& what) {
  out->set_name(name);
  out->set_data_type(onnx_elem_type(t.dtype(), what));
  for (int64_t d : t.shape()) out->add_dims(d);
  // raw_data is little-endian, as lowbit's buffers are on every supported target.
  if (t.nbytes() > 0) out->set_raw_data(t.raw(), static_cast<size_t>(t.nbytes()));
}

void fill_onnx_value_info(onnx::ValueInfoProto* vi, const Value& v) {
  vi->set_name(v.name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_elem_type(v.dtype, "value '" + v.name + "'"));
  if (!v.shape_known) return;  // unknown rank: leave the shape out entirely
  auto* shape = tt->mutable_shape();
  for (int64_t d : v.shape) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
  }
}

bool opset13_attribute(const Node& n, const std::string& name) {
  // A QLut exports as its op (attribute `op`) between DequantizeLinear and QuantizeLinear, with
  // that op's attributes: a BatchNormalization table's training_mode = 0 made ONNX Runtime refuse
  // the whole model.
  const std::string op = n.op == "QLut" ? n.attrs.get_string("op", "") : n.op;
  if (op == "Softmax" && name == "coerce_2d") return false;
  if (op == "BatchNormalization" && name == "training_mode") return n.attrs.get_int(name, 0) != 0;
  if (op == "Reshape" && name == "allowzero") return n.attrs.get_int(name, 0) != 0;
  if (op == "Concat" && name == kConcatInPlaceAttr) return false;  // lowbit's memory-plan hint
  return true;
}

void fill_onnx_attribute(onnx::AttributeProto* a, const std::string& name, const AttrValue& v, const Node& n) {
  using AP = onnx::AttributeProto;
  a->set_name(name);
  if (auto* i = std::get_if<int64_t>(&v)) {
    a->set_type(AP::INT);
    a->set_i(*i);
  } else if (auto* f = std::get_if<float>(&v)) {
    a->set_type(AP::FLOAT);
    a->set_f(*f);
  } else if (auto* s = std::get_if<std::string>(&v)) {
    a->set_type(AP::STRING);
    a->set_s(*s);
  } else if (auto* is = std::get_if<std::vector<int64_t>>(&v)) {
    a->set_type(AP::INTS);
    for (int64_t x : *is) a->add_ints(x);
  } else if (auto* fs = std::get_if<std::vector<float>>(&v)) {
    a->set_type(AP::FLOATS);
    for (float x : *fs) a->add_floats(x);
  } else if (auto* ss = std::get_if<std::vector<std::string>>(&v)) {
    a->set_type(AP::STRINGS);
    for (const auto& x : *ss) a->add_strings(x);
  } else if (auto* t = std::get_if<Tensor>(&v)) {
    a->set_type(AP::TENSOR);
    fill_onnx_tensor(a->mutable_t(), *t, "", "node " + n.label() + " attribute '" + name + "'");
  }
}


std::string export_onnx_bytes(const Graph& g) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.set_producer_name("lowbit");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kExportOnnxOpset);

  auto* graph = model.mutable_graph();
  graph->set_name(g.name.empty() ? "lowbit" : g.name);

  std::set<std::string> names;
  for (const Value& v : g.values) {
    if (v.name.empty()) throw Error("cannot export a value without a name");
    if (!names.insert(v.name).second) throw Error("cannot export: value name '" + v.name + "' is used twice");
  }

  for (const Value& v : g.values)
    if (v.constant) fill_onnx_tensor(graph->add_initializer(), *v.constant, v.name, "constant '" + v.name + "'");
  for (ValueId id : g.inputs) fill_onnx_value_info(graph->add_input(), g.value(id));
  for (ValueId id : g.outputs) fill_onnx_value_info(graph->add_output(), g.value(id));

  std::set<ValueId> io(g.inputs.begin(), g.inputs.end());
  io.insert(g.outputs.begin(), g.outputs.end());
  for (const Node& n : g.nodes) {
    check_exportable(g, n);
    auto* p = graph->add_node();
    p->set_name(n.name);
    p->set_op_type(n.op);
    // Omitted optional inputs are "" in ONNX; trailing ones are simply left off.
    size_t n_in = n.inputs.size();
    while (n_in > 0 && n.inputs[n_in - 1] == kNoValue) --n_in;
    for (size_t i = 0; i < n_in; ++i) p->add_input(n.inputs[i] == kNoValue ? "" : g.value(n.inputs[i]).name);
    for (ValueId o : n.outputs) p->add_output(o == kNoValue ? "" : g.value(o).name);
    for (const auto& [name, value] : n.attrs.all())
      if (opset13_attribute(n, name)) fill_onnx_attribute(p->add_attribute(), name, value, n);
    // Intermediate values whose shapes are known help consumers of the file (and ORT's planner).
    for (ValueId o : n.outputs)
      if (o != kNoValue && !io.count(o) && g.value(o).shape_known) fill_onnx_value_info(graph->add_value_info(), g.value(o));
  }

  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw Error("failed to serialise the ONNX model (over 2 GiB?)");
  return bytes;
}

void export_onnx(const Graph& g, const std::string& path) {
  std::string bytes = export_onnx_bytes(g);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error("cannot open '" + path + "' for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw Error("failed writing '" + path + "'");
}

}  // namespace lowbit
