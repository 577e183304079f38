// Runs the ONNX backend node tests (libonnx-testdata) through import -> compile -> run, with and
// without the graph passes, and compares against the reference outputs.
//
// Selection: a test is run when every node's op is one lowbit supports and every graph input and
// output is a tensor of a dtype lowbit has; the rest are counted, not run. A selected test either
// passes or is listed in kExpectedUnsupported with the reason; anything else fails, and so does a
// listed test that starts passing (so the list cannot go stale and hide regressions).
#include <fnmatch.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lowbit/common/error.h"
#include "lowbit/frontend/onnx/onnx_import.h"
#include "lowbit/frontend/onnx/onnx_tensor.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/runtime/compiled_model.h"

namespace lowbit {
namespace {

namespace fs = std::filesystem;

const char* const kNodeTestDir = "/usr/share/libonnx-testdata/data/node";

struct ExpectedUnsupported {
  const char* pattern;  // a test name or a glob (fnmatch)
  const char* reason;
};

// Tests that use only supported ops and dtypes but exercise something lowbit deliberately does not do.
const ExpectedUnsupported kExpectedUnsupported[] = {
    // The importer accepts opsets 9..17 only; these models declare an older opset.
    {"test_globalaveragepool", "model opset 1 < 9"},
    {"test_globalaveragepool_precomputed", "model opset 1 < 9"},
    {"test_globalmaxpool", "model opset 1 < 9"},
    {"test_globalmaxpool_precomputed", "model opset 1 < 9"},
    {"test_hardsigmoid", "model opset 6 < 9"},
    {"test_hardsigmoid_default", "model opset 6 < 9"},
    {"test_hardsigmoid_example", "model opset 6 < 9"},
    {"test_convtranspose_with_kernel", "model opset 8 < 9"},
    // Spatial ops are 2-D (NCHW) only.
    {"test_averagepool_1d_default", "1-D pooling"},
    {"test_averagepool_3d_default", "3-D pooling"},
    {"test_maxpool_1d_default", "1-D pooling"},
    {"test_maxpool_3d_default", "3-D pooling"},
    {"test_convtranspose_1d", "1-D ConvTranspose"},
    {"test_convtranspose_3d", "3-D ConvTranspose"},
    // Inference only.
    {"test_maxpool_with_argmax_*", "MaxPool Indices output"},
    {"test_batchnorm_epsilon_training_mode", "training-mode BatchNormalization"},
    {"test_batchnorm_example_training_mode", "training-mode BatchNormalization"},
    {"test_training_dropout*", "training-mode Dropout"},
    // Every graph input dimension must be >= 1.
    {"test_reshape_allowzero_reordered", "zero-size graph input"},
    {"test_split_zero_size_splits", "zero-size graph input"},
    // Resize: nearest and linear only, no TF-specific coordinate modes.
    {"test_resize_*cubic*", "cubic Resize"},
    {"test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn", "Resize tf_half_pixel_for_nn"},
    {"test_resize_tf_crop_and_resize", "Resize tf_crop_and_resize"},
    {"test_convtranspose_output_shape", "ConvTranspose output_shape beyond the unpadded output (negative padding)"},
    // lowbit's 8-bit types are quantized storage; plain ONNX integer arithmetic on them is not offered.
    {"test_add_uint8", "u8 arithmetic"},
    {"test_sub_uint8", "u8 arithmetic"},
    {"test_mul_uint8", "u8 arithmetic"},
    {"test_div_uint8", "u8 arithmetic"},
    {"test_max_uint8", "u8 Max"},
    {"test_min_uint8", "u8 Min"},
    {"test_max_int8", "i8 Max"},
    {"test_min_int8", "i8 Min"},
};

const ExpectedUnsupported* find_expected(const std::string& name) {
  for (const auto& e : kExpectedUnsupported)
    if (fnmatch(e.pattern, name.c_str(), 0) == 0) return &e;
  return nullptr;
}

// lowbit compiles static graphs: weights and shape/axis operands must be constants (as they are in
// exported models), while the node tests feed them as graph inputs. Such inputs are bound to their
// test-data values as initializers; everything else stays a runtime input.
const std::map<std::string, std::vector<size_t>> kBoundOperands = {
    {"Conv", {1, 2}},         {"ConvTranspose", {1, 2}}, {"BatchNormalization", {1, 2, 3, 4}},
    {"Reshape", {1}},         {"Resize", {1, 2, 3}},     {"Slice", {1, 2, 3, 4}},
    {"Pad", {1, 2, 3}},       {"Clip", {1, 2}},          {"Split", {1}},
    {"Squeeze", {1}},         {"Unsqueeze", {1}},        {"Tile", {1}},
    {"Expand", {1}},          {"ConstantOfShape", {0}},  {"Range", {0, 1, 2}},
    {"Dropout", {1, 2}},      {"ReduceMean", {1}},       {"ReduceSum", {1}},
    // Quantized ops: weights, scales and zero points.
    {"QuantizeLinear", {1, 2}}, {"DequantizeLinear", {1, 2}}, {"ConvInteger", {1, 2, 3}},
    {"MatMulInteger", {1, 2, 3}}, {"QLinearConv", {1, 2, 3, 4, 5, 6, 7, 8}}, {"QLinearMatMul", {1, 2, 3, 4, 5, 6, 7}},
};

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

bool load_model_proto(const std::string& path, onnx::ModelProto& m) {
  std::string bytes;
  return read_file(path, bytes) && m.ParseFromString(bytes);
}

bool lowbit_tensor_type(const onnx::ValueInfoProto& vi) {
  return vi.type().has_tensor_type() && dtype_from_onnx(vi.type().tensor_type().elem_type()).has_value();
}

struct Census {
  std::vector<std::string> selected;
  int unsupported_op = 0, unsupported_dtype = 0;
};

Census scan_tests() {
  Census c;
  std::error_code ec;
  if (!fs::is_directory(kNodeTestDir, ec)) return c;
  std::vector<std::string> ops = supported_ops();
  std::set<std::string> supported(ops.begin(), ops.end());
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kNodeTestDir))
    if (fs::exists(e.path() / "model.onnx")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    onnx::ModelProto m;
    if (!load_model_proto(std::string(kNodeTestDir) + "/" + name + "/model.onnx", m)) {
      c.selected.push_back(name);  // unreadable: let the test report it
      continue;
    }
    bool ops_ok = true;
    for (const auto& n : m.graph().node()) {
      std::string op = n.op_type() == "Upsample" ? "Resize" : n.op_type();  // the importer rewrites it
      if (!supported.count(op) || !(n.domain().empty() || n.domain() == "ai.onnx")) ops_ok = false;
    }
    bool types_ok = true;
    for (const auto& vi : m.graph().input()) types_ok &= lowbit_tensor_type(vi);
    for (const auto& vi : m.graph().output()) types_ok &= lowbit_tensor_type(vi);
    if (!ops_ok) ++c.unsupported_op;
    else if (!types_ok) ++c.unsupported_dtype;
    else c.selected.push_back(name);
  }
  return c;
}

const Census& census() {
  static const Census c = scan_tests();
  return c;
}

std::vector<std::string> test_params() {
  if (census().selected.empty()) return {"testdata_missing"};
  return census().selected;
}

int g_ran = 0, g_passed = 0, g_expected_unsupported = 0;

class ConformanceSummary : public ::testing::Environment {
 public:
  void TearDown() override {
    if (census().selected.empty() || g_ran == 0) return;
    std::printf("[ onnx conformance ] %d passed, %d expected-unsupported, %d failed, of %d run (%zu selected node "
                "tests; not selected: %d for an unsupported op, %d for an unsupported dtype)\n",
                g_passed, g_expected_unsupported, g_ran - g_passed - g_expected_unsupported, g_ran,
                census().selected.size(), census().unsupported_op,
                census().unsupported_dtype);
  }
};
const auto* const kSummaryEnv = ::testing::AddGlobalTestEnvironment(new ConformanceSummary);

std::string compare(const Tensor& got, const Tensor& want) {
  std::ostringstream os;
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
  if (got.shape() != want.shape()) return "shape " + shape_str(got.shape()) + ", expected " + shape_str(want.shape());
  int bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    if (want.dtype() == DType::f32) {
      float g = got.data<float>()[i], w = want.data<float>()[i];
      if (std::isnan(w)) ok = std::isnan(g);
      else if (std::isinf(w)) ok = g == w;
      else ok = std::fabs(g - w) <= 1e-4f + 1e-3f * std::fabs(w);
      if (!ok && bad < 5) os << " [" << i << "] " << g << " vs " << w;
    } else {
      ok = read_int(got, i) == read_int(want, i);
      if (!ok && bad < 5) os << " [" << i << "] " << read_int(got, i) << " vs " << read_int(want, i);
    }
    bad += !ok;
  }
  if (!bad) return "";
  return std::to_string(bad) + " of " + std::to_string(want.numel()) + " values differ (got vs expected):" + os.str();
}

struct DataSet {
  std::map<std::string, Tensor> inputs;  // by graph input name
  std::vector<Tensor> outputs;
};

DataSet load_data_set(const onnx::ModelProto& m, const fs::path& dir) {
  DataSet d;
  std::vector<std::string> runtime_inputs;
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  for (const auto& vi : m.graph().input())
    if (!inits.count(vi.name())) runtime_inputs.push_back(vi.name());
  for (size_t k = 0;; ++k) {
    fs::path p = dir / ("input_" + std::to_string(k) + ".pb");
    if (!fs::exists(p)) break;
    std::string name;
    Tensor t = load_onnx_tensor_file(p.string(), &name);
    if (name.empty() && k < runtime_inputs.size()) name = runtime_inputs[k];
    d.inputs[name] = std::move(t);
  }
  for (size_t k = 0;; ++k) {
    fs::path p = dir / ("output_" + std::to_string(k) + ".pb");
    if (!fs::exists(p)) break;
    d.outputs.push_back(load_onnx_tensor_file(p.string()));
  }
  return d;
}

// Imports the model with the data set's input shapes and binds weight/shape operands to constants.
// Returns the tensors for the remaining runtime inputs, in graph order.
Graph prepare_graph(const std::string& model_path, const DataSet& d, std::vector<Tensor>& runtime_inputs) {
  std::map<std::string, Shape> shapes;
  for (const auto& [name, t] : d.inputs) shapes[name] = t.shape();
  Graph g = import_onnx_file(model_path, shapes);
  std::set<ValueId> bind;
  for (const Node& n : g.nodes) {
    auto it = kBoundOperands.find(n.op);
    if (it == kBoundOperands.end()) continue;
    for (size_t i : it->second)
      if (ValueId v = Graph::input_or_none(n, i); v != kNoValue && !g.is_constant(v)) bind.insert(v);
  }
  std::vector<ValueId> kept;
  for (ValueId v : g.inputs) {
    auto it = d.inputs.find(g.value(v).name);
    if (it == d.inputs.end()) throw Error("test data has no tensor for input '" + g.value(v).name + "'");
    if (bind.count(v)) {
      Value& val = g.value(v);
      val.constant = it->second;
      val.dtype = it->second.dtype();
      val.shape = it->second.shape();
      val.shape_known = true;
    } else {
      kept.push_back(v);
      runtime_inputs.push_back(it->second);
    }
  }
  g.inputs = kept;
  return g;
}

// Runs every data set of one test in one mode; returns "" on success or what went wrong.
std::string run_test(const std::string& name, bool optimize) {
  const fs::path dir = fs::path(kNodeTestDir) / name;
  const std::string model_path = (dir / "model.onnx").string();
  onnx::ModelProto m;
  if (!load_model_proto(model_path, m)) return "cannot read " + model_path;
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test_data_set_* directories";
  const std::string mode = optimize ? "optimize=true" : "optimize=false";
  for (const auto& set : sets) {
    const std::string where = mode + ", " + set.filename().string() + ": ";
    std::vector<Tensor> outs;
    DataSet d;
    try {
      d = load_data_set(m, set);
      std::vector<Tensor> inputs;
      Graph g = prepare_graph(model_path, d, inputs);
      CompileOptions opts;
      opts.optimize = optimize;
      opts.threads = 2;
      auto cm = CompiledModel::compile(std::move(g), opts);
      outs = cm->run(inputs);
    } catch (const std::exception& e) {
      return where + e.what();
    }
    if (outs.size() != d.outputs.size())
      return where + std::to_string(outs.size()) + " outputs, expected " + std::to_string(d.outputs.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      std::string diff = compare(outs[k], d.outputs[k]);
      if (!diff.empty()) return where + "output " + std::to_string(k) + " (" + m.graph().output(static_cast<int>(k)).name() + "): " + diff;
    }
  }
  return "";
}

class OnnxNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTest, MatchesReference) {
  const std::string& name = GetParam();
  if (name == "testdata_missing")
    GTEST_SKIP() << kNodeTestDir << " not found: install libonnx-testdata to run the ONNX conformance tests";
  ++g_ran;
  std::string err = run_test(name, false);
  if (err.empty()) err = run_test(name, true);
  const ExpectedUnsupported* exp = find_expected(name);
  if (exp) {
    if (err.empty()) {
      FAIL() << name << " is listed as expected-unsupported (" << exp->reason
             << ") but now passes: remove it from kExpectedUnsupported";
    }
    ++g_expected_unsupported;
    GTEST_SKIP() << "expected-unsupported (" << exp->reason << "): " << err;
  }
  ASSERT_EQ(err, "") << name;
  ++g_passed;
}

INSTANTIATE_TEST_SUITE_P(Node, OnnxNodeTest, ::testing::ValuesIn(test_params()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace lowbit
