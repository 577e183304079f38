// ONNX importer: bad inputs fail with messages that name the file/node/op and the reason, and
// older opsets are normalised into the canonical forms.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "lowbit/common/error.h"
#include "lowbit/frontend/onnx/onnx_import.h"
#include "lowbit/frontend/onnx/onnx_tensor.h"
#include "lowbit/ir/codes.h"
#include "lowbit/runtime/compiled_model.h"

namespace lowbit {
namespace {

namespace fs = std::filesystem;

const char* const kNodeTestDir = "/usr/share/libonnx-testdata/data/node";

// Expects fn to throw lowbit::Error whose message contains every one of `parts`.
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
    return;
  }
  ADD_FAILURE() << "no lowbit::Error thrown";
}

std::string temp_path(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("lowbit_onnx_import_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

std::string write_file(const std::string& name, const std::string& bytes) {
  std::string p = temp_path(name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

// --- ModelProto builders ------------------------------------------------------------------------

struct ModelBuilder {
  onnx::ModelProto m;
  onnx::GraphProto* g;

  explicit ModelBuilder(int opset = 13) {
    m.set_ir_version(8);
    auto* os = m.add_opset_import();
    os->set_domain("");
    os->set_version(opset);
    g = m.mutable_graph();
    g->set_name("test");
  }

  static void set_type(onnx::ValueInfoProto* vi, int elem, const std::vector<int64_t>& dims,
                       const std::vector<std::string>& symbolic = {}) {
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* sh = tt->mutable_shape();
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = sh->add_dim();
      if (dims[i] >= 0) d->set_dim_value(dims[i]);
      else if (i < symbolic.size() && !symbolic[i].empty()) d->set_dim_param(symbolic[i]);
    }
  }

  ModelBuilder& input(const std::string& name, const std::vector<int64_t>& dims, int elem = onnx::TensorProto::FLOAT,
                      const std::vector<std::string>& symbolic = {}) {
    auto* vi = g->add_input();
    vi->set_name(name);
    set_type(vi, elem, dims, symbolic);
    return *this;
  }
  ModelBuilder& output(const std::string& name, int elem = onnx::TensorProto::FLOAT) {
    auto* vi = g->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    return *this;
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
                        const std::string& name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return n;
  }
  onnx::TensorProto* init_f32(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (auto d : dims) t->add_dims(d);
    for (auto x : v) t->add_float_data(x);
    return t;
  }
  std::string bytes() const { return m.SerializeAsString(); }
  Graph import(const std::map<std::string, Shape>& shapes = {}) const { return import_onnx_bytes(bytes(), shapes, "t.onnx"); }
};

void add_ints_attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}
void add_float_attr(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

ModelBuilder relu_model(int opset = 13) {
  ModelBuilder b(opset);
  b.input("image", {1, 3, 4, 4}).output("y");
  b.node("Relu", {"image"}, {"y"}, "relu1");
  return b;
}

const Node& only_node(const Graph& g, const std::string& op) {
  for (const auto& n : g.nodes)
    if (n.op == op) return n;
  throw std::runtime_error("no " + op + " node");
}

// --- Bad files ----------------------------------------------------------------------------------

TEST(OnnxImport, TruncatedModelFile) {
  const std::string src = std::string(kNodeTestDir) + "/test_conv_with_strides_padding/model.onnx";
  if (!fs::exists(src)) GTEST_SKIP() << src << " not found (libonnx-testdata)";
  std::ifstream f(src, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 20u);
  std::string p = write_file("truncated.onnx", bytes.substr(0, bytes.size() / 2));
  expect_error([&] { import_onnx_file(p); }, {"truncated.onnx", "not a valid ModelProto"});
}

TEST(OnnxImport, GarbageBytes) {
  std::string p = write_file("garbage.onnx", std::string("this is not an ONNX model\x01\xff\xfe garbage", 36));
  expect_error([&] { import_onnx_file(p); }, {"garbage.onnx", "not a valid ModelProto"});
  // Parses as a protobuf (field 1 = 7) but holds no graph.
  p = write_file("nograph.onnx", std::string("\x08\x07", 2));
  expect_error([&] { import_onnx_file(p); }, {"nograph.onnx", "not a valid ModelProto", "no graph"});
}

TEST(OnnxImport, EmptyFile) {
  std::string p = write_file("empty.onnx", "");
  expect_error([&] { import_onnx_file(p); }, {"empty.onnx", "empty"});
}

TEST(OnnxImport, MissingFile) {
  std::string p = temp_path("does_not_exist.onnx");
  expect_error([&] { import_onnx_file(p); }, {"does_not_exist.onnx", "cannot open", "No such file"});
}

TEST(OnnxImport, GraphWithoutNodes) {
  ModelBuilder b;
  b.input("x", {1}).output("x");
  expect_error([&] { b.import(); }, {"t.onnx", "no nodes"});
}

// --- Unsupported content -----------------------------------------------------------------------

TEST(OnnxImport, UnknownOp) {
  ModelBuilder b;
  b.input("x", {1, 4}).output("y");
  b.node("FooBar", {"x"}, {"y"}, "foo1");
  expect_error(
      [&] {
        CompileOptions opts;
        CompiledModel::compile(b.import(), opts);
      },
      {"t.onnx", "FooBar", "foo1"});
}

TEST(OnnxImport, Opset26Rejected) {
  auto b = relu_model(26);
  expect_error([&] { b.import(); }, {"t.onnx", "opset 26", "9..25"});
}

TEST(OnnxImport, Opset21And25Accepted) {  // INT4 and INT2 QDQ (sub-byte weights and activations)
  for (int opset : {21, 25}) {
    auto b = relu_model(opset);
    EXPECT_NO_THROW(b.import()) << opset;
  }
}

TEST(OnnxImport, Opset8Rejected) {
  auto b = relu_model(8);
  expect_error([&] { b.import(); }, {"t.onnx", "opset 8", "9..25"});
}

TEST(OnnxImport, OtherDomainRejected) {
  auto b = relu_model();
  auto* os = b.m.add_opset_import();
  os->set_domain("com.microsoft");
  os->set_version(1);
  b.g->mutable_node(0)->set_domain("com.microsoft");
  expect_error([&] { b.import(); }, {"'relu1' (Relu)", "com.microsoft"});
}

TEST(OnnxImport, SubgraphsRejected) {
  ModelBuilder b;
  b.input("c", {}, onnx::TensorProto::BOOL).output("y");
  auto* n = b.node("If", {"c"}, {"y"}, "branch");
  auto* a = n->add_attribute();
  a->set_name("then_branch");
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name("then");
  expect_error([&] { b.import(); }, {"node 'branch' (If): subgraphs are unsupported"});
}

// Graph-size limits (OnnxLimits), each checked before anything is built from the graph; the limits
// are lowered here so that the models stay small, the checks are the same.
TEST(OnnxImport, GraphsOverTheLimitsAreRefusedNamingTheLimit) {
  ModelBuilder b;
  b.input("x", {1, 4}).output("y");
  b.node("Relu", {"x"}, {"r1"}, "relu1");
  b.node("Relu", {"r1"}, {"r2"}, "relu2");
  b.node("Relu", {"r2"}, {"y"}, "relu3");
  EXPECT_NO_THROW(b.import());
  OnnxLimits few_nodes;
  few_nodes.max_nodes = 2;
  expect_error([&] { import_onnx_bytes(b.bytes(), {}, "t.onnx", few_nodes); },
               {"t.onnx", "nodes: 3, over the importer's limit of 2"});
  OnnxLimits small_file;
  small_file.max_file_bytes = 8;
  expect_error([&] { import_onnx_bytes(b.bytes(), {}, "t.onnx", small_file); }, {"t.onnx", "bytes, over the limit of 8"});
  OnnxLimits few_values;
  few_values.max_attribute_values = 3;
  add_ints_attr(b.g->mutable_node(0), "junk", {1, 2, 3, 4});
  expect_error([&] { import_onnx_bytes(b.bytes(), {}, "t.onnx", few_values); },
               {"node 'relu1' (Relu) attribute 'junk' values: 4, over the importer's limit of 3"});
}

TEST(OnnxImport, DeclaredRanksOverTheLimitAreRefused) {
  ModelBuilder b;
  b.input("x", std::vector<int64_t>(17, 1)).output("y");
  b.node("Relu", {"x"}, {"y"}, "relu1");
  expect_error([&] { b.import(); }, {"graph input 'x' rank: 17, over the importer's limit of 16"});
  ModelBuilder c;
  c.input("x", {1, 4}).output("y");
  c.init_f32("w", std::vector<int64_t>(20, 1), {1.f});
  c.node("Add", {"x", "w"}, {"y"}, "add1");
  expect_error([&] { c.import(); }, {"initializer 'w' rank: 20"});
}

TEST(OnnxImport, FilesOverTheLimitAreRefusedBeforeReading) {
  const std::string p = write_file("limit.onnx", relu_model().bytes());
  OnnxLimits tiny;
  tiny.max_file_bytes = 4;
  expect_error([&] { import_onnx_file(p, {}, tiny); }, {"limit.onnx", "external data"});
}

TEST(OnnxImport, UndefinedValue) {
  ModelBuilder b;
  b.input("x", {1, 4}).output("y");
  b.node("Add", {"x", "ghost"}, {"y"}, "add1");
  expect_error([&] { b.import(); }, {"'add1' (Add)", "'ghost'", "not defined"});
}

TEST(OnnxImport, UnsupportedInputDtype) {
  ModelBuilder b;
  b.input("x", {2}, onnx::TensorProto::DOUBLE).output("y");
  b.node("Relu", {"x"}, {"y"});
  expect_error([&] { b.import(); }, {"'x'", "DOUBLE"});
}

// --- External data (onnx.save(..., save_as_external_data=True)) -----------------------------------

// An initializer whose bytes live in `location` at `offset` (and `length`, when given).
void external_init(ModelBuilder& b, const std::string& name, const std::vector<int64_t>& dims, const std::string& location,
                   const std::string& offset, const std::string& length = "", int elem = onnx::TensorProto::FLOAT) {
  auto* t = b.g->add_initializer();
  t->set_name(name);
  t->set_data_type(elem);
  for (int64_t d : dims) t->add_dims(d);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const std::string& k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", location);
  if (!offset.empty()) kv("offset", offset);
  if (!length.empty()) kv("length", length);
}

// y = (x + a) * w: `a` at an odd offset (copied out of the mapping), `w` 64-byte aligned with room
// after it (wrapped in place), both in one file beside the model, as ONNX's tools write them.
struct ExternalModel {
  fs::path dir;
  std::string model_path;
  std::vector<float> a = {1.f, -2.f, 3.f, -4.f, 5.f, -6.f, 7.f, -8.f};
  std::vector<float> w = {0.5f, 0.25f, -1.f, 2.f, 4.f, -0.5f, 1.5f, 3.f};

  ExternalModel(const std::string& a_location = "weights.bin", const std::string& a_offset = "4",
                const std::string& a_length = "32") {
    dir = fs::path(temp_path("ext")) ;
    fs::create_directories(dir);
    std::string blob(4 + 32, '\0');
    std::memcpy(blob.data() + 4, a.data(), 32);
    blob.resize(64, '\0');
    blob.append(reinterpret_cast<const char*>(w.data()), 32);
    blob.resize(256, '\0');
    std::ofstream(dir / "weights.bin", std::ios::binary) << blob;
    ModelBuilder b;
    b.input("x", {8}).output("y");
    external_init(b, "a", {8}, a_location, a_offset, a_length);
    external_init(b, "w", {8}, "weights.bin", "64", "32");
    b.node("Add", {"x", "a"}, {"t"});
    b.node("Mul", {"t", "w"}, {"y"});
    model_path = (dir / "model.onnx").string();
    std::ofstream(model_path, std::ios::binary) << b.bytes();
  }
};

// True if `p` lies in a mapping of the file `path` (/proc/self/maps).
bool in_file_mapping(const void* p, const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const std::string canon = fs::canonical(path).string();
  const auto addr = reinterpret_cast<uintptr_t>(p);
  while (std::getline(maps, line)) {
    if (line.size() < canon.size() || line.compare(line.size() - canon.size(), canon.size(), canon) != 0) continue;
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && addr >= lo && addr < hi) return true;
  }
  return false;
}

TEST(OnnxImport, ExternalDataIsReadFromTheModelsFolder) {
  ExternalModel em;
  Graph g = import_onnx_file(em.model_path);
  const Tensor* w = nullptr;
  for (const Value& v : g.values)
    if (v.name == "w") w = &*v.constant;
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(in_file_mapping(w->raw(), (em.dir / "weights.bin").string())) << "the aligned tensor was copied";
  CompileOptions o;
  o.threads = 1;
  auto m = CompiledModel::compile(std::move(g), o);
  Tensor x(DType::f32, {8});
  for (int i = 0; i < 8; ++i) x.data<float>()[i] = float(i);
  const Tensor y = m->run({x})[0];
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y.data<float>()[i], (float(i) + em.a[size_t(i)]) * em.w[size_t(i)]) << i;

  // Given as bytes, the model has no folder to read from.
  std::ifstream f(em.model_path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), {});
  expect_error([&] { import_onnx_bytes(bytes); }, {"'a'", "external", "load the model from its file"});
}

TEST(OnnxImport, ExternalDataOutsideTheFolderOrPastItsFileIsRefused) {
  {
    ExternalModel em;  // something to point at outside the folder, and a symlink to it inside
    std::ofstream(em.dir.parent_path() / "outside.bin", std::ios::binary) << std::string(64, 'x');
    fs::remove(em.dir / "link.bin");
    fs::create_symlink(em.dir.parent_path() / "outside.bin", em.dir / "link.bin");
  }
  const std::string outside = (fs::path(temp_path("outside.bin"))).string();
  struct Case {
    std::string location, offset, length;
    std::vector<std::string> expect;
  };
  const std::vector<Case> cases = {
      {"../outside.bin", "0", "32", {"'a'", "'..'"}},
      {outside, "0", "32", {"'a'", "absolute path"}},
      {"link.bin", "0", "32", {"'a'", "outside the model's folder"}},
      {"missing.bin", "0", "32", {"'a'", "cannot be opened"}},
      {"", "0", "32", {"'a'", "no location"}},
      {".", "0", "32", {"'a'", "outside the model's folder"}},
      {"weights.bin", "250", "32", {"'a'", "past the end"}},
      {"weights.bin", "18446744073709551615", "32", {"'a'", "past the end"}},
      {"weights.bin", "0", "18446744073709551615", {"'a'", "past the end"}},
      {"weights.bin", "4", "28", {"'a'", "28 bytes of external data, expected 32"}},
      {"weights.bin", "4x", "32", {"'a'", "offset '4x' is not a number"}},
      {"weights.bin", "-4", "32", {"'a'", "is not a number"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.location + " @" + c.offset + "+" + c.length);
    ExternalModel em(c.location, c.offset, c.length);
    expect_error([&] { import_onnx_file(em.model_path); }, c.expect);
  }
}

// --- Input shapes -------------------------------------------------------------------------------

TEST(OnnxImport, InputShapeNamesNonexistentInput) {
  auto b = relu_model();
  expect_error([&] { b.import({{"imgae", {1, 3, 4, 4}}}); }, {"'imgae'", "image"});
}

TEST(OnnxImport, InputShapeRankMismatch) {
  auto b = relu_model();
  expect_error([&] { b.import({{"image", {1, 3, 4}}}); }, {"image", "rank"});
}

TEST(OnnxImport, SymbolicDimsAndInputShapes) {
  ModelBuilder b;
  b.input("x", {-1, 3, -1, -1}, onnx::TensorProto::FLOAT, {"batch", "", "h", "w"}).output("y");
  b.node("Relu", {"x"}, {"y"});
  Graph g = b.import();
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.value(g.inputs[0]).shape, (Shape{-1, 3, -1, -1}));
  EXPECT_FALSE(g.value(g.inputs[0]).shape_known);
  g = b.import({{"x", {2, 3, 8, 8}}});
  EXPECT_EQ(g.value(g.inputs[0]).shape, (Shape{2, 3, 8, 8}));
  EXPECT_TRUE(g.value(g.inputs[0]).shape_known);
  // A fixed dimension cannot be overridden.
  expect_error([&] { b.import({{"x", {2, 4, 8, 8}}}); }, {"x", "conflicts"});
}

TEST(OnnxImport, WrongInputShapeAtRun) {
  auto b = relu_model();
  CompileOptions opts;
  opts.threads = 1;
  auto m = CompiledModel::compile(b.import(), opts);
  Tensor bad(DType::f32, {1, 3, 5, 5});
  expect_error([&] { m->run({bad}); }, {"image", "1x3x5x5"});
}

// --- Structure and normalisation ----------------------------------------------------------------

TEST(OnnxImport, InitializersAndNames) {
  ModelBuilder b;
  b.input("x", {2}).input("w", {2}).output("z");  // "w" is also an initializer: a constant
  b.init_f32("w", {2}, {1.5f, -2.f});
  // Deliberately out of order: the importer sorts topologically.
  b.node("Relu", {"t"}, {"z"});
  b.node("Add", {"x", "w"}, {"t"}, "add");
  Graph g = b.import();
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.value(g.inputs[0]).name, "x");
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, "Add");
  EXPECT_EQ(g.nodes[1].name, "Relu_0");  // synthesised "<op>_<index in file>"
  const Tensor* w = g.constant(g.nodes[0].inputs[1]);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->data<float>()[1], -2.f);
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.value(g.outputs[0]).name, "z");

  CompileOptions opts;
  opts.threads = 1;
  auto m = CompiledModel::compile(std::move(g), opts);
  Tensor x(DType::f32, {2});
  x.data<float>()[0] = 1.f;
  x.data<float>()[1] = 1.f;
  auto out = m->run({x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 2.5f);
  EXPECT_FLOAT_EQ(out[0].data<float>()[1], 0.f);
}

TEST(OnnxImport, OmittedOptionalInput) {
  ModelBuilder b;
  b.input("x", {4}).input("mx", {}).output("y");
  b.node("Clip", {"x", "", "mx"}, {"y"}, "clip");
  Graph g = b.import();
  const Node& n = only_node(g, "Clip");
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(n.inputs[1], kNoValue);
}

TEST(OnnxImport, ClipOpset10AttrsBecomeInputs) {
  ModelBuilder b(10);
  b.input("x", {4}).output("y");
  auto* n = b.node("Clip", {"x"}, {"y"}, "clip");
  add_float_attr(n, "min", 0.f);
  add_float_attr(n, "max", 6.f);
  Graph g = b.import();
  const Node& c = only_node(g, "Clip");
  ASSERT_EQ(c.inputs.size(), 3u);
  ASSERT_TRUE(g.is_constant(c.inputs[1]) && g.is_constant(c.inputs[2]));
  EXPECT_EQ(g.constant(c.inputs[2])->data<float>()[0], 6.f);
  EXPECT_FALSE(c.attrs.has("min"));
  EXPECT_FALSE(c.attrs.has("max"));
}

TEST(OnnxImport, SqueezeAndSplitOpset11AttrsBecomeInputs) {
  ModelBuilder b(11);
  b.input("x", {1, 6}).output("a").output("b");
  add_ints_attr(b.node("Squeeze", {"x"}, {"s"}, "sq"), "axes", {0});
  auto* sp = b.node("Split", {"s"}, {"a", "b"}, "split");
  add_ints_attr(sp, "split", {2, 4});
  Graph g = b.import();
  const Node& sq = only_node(g, "Squeeze");
  ASSERT_EQ(sq.inputs.size(), 2u);
  const Tensor* axes = g.constant(sq.inputs[1]);
  ASSERT_NE(axes, nullptr);
  EXPECT_EQ(axes->dtype(), DType::i64);
  EXPECT_EQ(axes->data<int64_t>()[0], 0);
  const Node& s = only_node(g, "Split");
  ASSERT_EQ(s.inputs.size(), 2u);
  EXPECT_EQ(g.constant(s.inputs[1])->data<int64_t>()[1], 4);
}

TEST(OnnxImport, PadOpset10AttrsBecomeInputs) {
  ModelBuilder b(10);
  b.input("x", {1, 1, 2, 2}).output("y");
  auto* n = b.node("Pad", {"x"}, {"y"}, "pad");
  add_ints_attr(n, "pads", {0, 0, 1, 1, 0, 0, 1, 1});
  add_float_attr(n, "value", 2.f);
  Graph g = b.import();
  const Node& p = only_node(g, "Pad");
  ASSERT_EQ(p.inputs.size(), 3u);
  EXPECT_EQ(g.constant(p.inputs[1])->numel(), 8);
  EXPECT_EQ(g.constant(p.inputs[2])->data<float>()[0], 2.f);
  EXPECT_FALSE(p.attrs.has("pads"));
}

TEST(OnnxImport, SoftmaxBeforeOpset13GetsCoerce2d) {
  ModelBuilder b(11);
  b.input("x", {2, 3}).output("y");
  b.node("Softmax", {"x"}, {"y"}, "sm");
  Graph g = b.import();
  const Node& n = only_node(g, "Softmax");
  EXPECT_EQ(n.attrs.get_int("coerce_2d", 0), 1);
  EXPECT_EQ(n.attrs.get_int("axis", -1), 1);
  ModelBuilder b13(13);
  b13.input("x", {2, 3}).output("y");
  b13.node("Softmax", {"x"}, {"y"}, "sm");
  EXPECT_FALSE(only_node(b13.import(), "Softmax").attrs.has("coerce_2d"));
}

TEST(OnnxImport, UpsampleBecomesResize) {
  ModelBuilder b(9);
  b.input("x", {1, 1, 2, 2}).output("y");
  b.init_f32("scales", {4}, {1, 1, 2, 2});
  b.node("Upsample", {"x", "scales"}, {"y"}, "up");
  Graph g = b.import();
  const Node& n = only_node(g, "Resize");
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(n.inputs[1], kNoValue);
  EXPECT_TRUE(g.is_constant(n.inputs[2]));
  EXPECT_EQ(n.attrs.get_string("coordinate_transformation_mode", ""), "asymmetric");
  EXPECT_EQ(n.attrs.get_string("nearest_mode", ""), "floor");
}

TEST(OnnxImport, BatchNormOldAttrsDropped) {
  ModelBuilder b(9);
  b.input("x", {1, 2, 2, 2}).output("y");
  for (const char* nm : {"s", "b", "m", "v"}) b.init_f32(nm, {2}, {1, 1});
  auto* n = b.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, "bn");
  auto* a = n->add_attribute();
  a->set_name("spatial");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  Graph g = b.import();
  EXPECT_FALSE(only_node(g, "BatchNormalization").attrs.has("spatial"));
}

// --- TensorProto conversion ---------------------------------------------------------------------

TEST(OnnxTensor, RawAndTypedData) {
  onnx::TensorProto t;
  t.set_name("t");
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(2);
  int64_t v[2] = {-3, 1ll << 40};
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v), sizeof v));
  Tensor r = tensor_from_onnx(t);
  EXPECT_EQ(r.dtype(), DType::i64);
  EXPECT_EQ(r.data<int64_t>()[1], 1ll << 40);

  onnx::TensorProto h;  // float16 in int32_data: 1.0 = 0x3c00, -2.5 = 0xc100
  h.set_data_type(onnx::TensorProto::FLOAT16);
  h.add_dims(2);
  h.add_int32_data(0x3c00);
  h.add_int32_data(0xc100);
  Tensor hr = tensor_from_onnx(h);
  EXPECT_EQ(hr.dtype(), DType::f32);
  EXPECT_EQ(hr.data<float>()[0], 1.f);
  EXPECT_EQ(hr.data<float>()[1], -2.5f);

  onnx::TensorProto d;
  d.set_data_type(onnx::TensorProto::DOUBLE);
  d.add_double_data(0.25);
  Tensor dr = tensor_from_onnx(d);
  EXPECT_EQ(dr.shape(), Shape{});
  EXPECT_EQ(dr.data<float>()[0], 0.25f);

  onnx::TensorProto b;
  b.set_name("flags");
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(3);
  b.set_raw_data(std::string("\x01\x00", 2));  // one byte short
  expect_error([&] { tensor_from_onnx(b); }, {"'flags'", "raw_data", "expected 3"});

  onnx::TensorProto s;
  s.set_name("names");
  s.set_data_type(onnx::TensorProto::STRING);
  expect_error([&] { tensor_from_onnx(s); }, {"'names'", "STRING"});
}

// ONNX INT4 (opset 21): two values per byte, element 0 in the low nibble, read as lowbit's i4.
TEST(OnnxImport, Int4TensorsArePackedLowNibbleFirst) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(kOnnxInt4);
  t.add_dims(3);
  const char raw[2] = {static_cast<char>(0x8F), static_cast<char>(0x07)};  // -1, -8 | 7
  t.set_raw_data(raw, 2);
  Tensor r = tensor_from_onnx(t);
  ASSERT_EQ(r.dtype(), DType::i4);
  EXPECT_EQ(load_code(r.raw(), DType::i4, 0), -1);
  EXPECT_EQ(load_code(r.raw(), DType::i4, 1), -8);
  EXPECT_EQ(load_code(r.raw(), DType::i4, 2), 7);
  t.set_raw_data(raw, 1);  // one byte short
  expect_error([&] { tensor_from_onnx(t); }, {"'w'", "raw_data", "expected 2"});
}

}  // namespace
}  // namespace lowbit
