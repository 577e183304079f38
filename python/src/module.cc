// lowbit._lowbit: the Python extension behind the `lowbit` package (python/lowbit/__init__.py).
// Everything here is a thin binding over the library's front door (api/build.h, api/bench.h): a
// session is a BuiltModel; inputs are read from numpy memory without a copy (Tensor::wrap) and
// outputs handed to numpy without one (the Tensor rides in a capsule). The GIL is released while a
// model runs, so Python threads run one session in parallel (runtime/compiled_model.h).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lowbit/api/bench.h"
#include "lowbit/api/build.h"
#include "lowbit/api/describe.h"
#include "lowbit/api/options.h"
#include "lowbit/artifact/artifact.h"
#include "lowbit/common/error.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/quant/precision.h"
#include "lowbit/target/target.h"

namespace py = pybind11;
using namespace lowbit;

namespace {

std::string onnx_type_name(DType t) {
  switch (t) {
    case DType::f32: return "tensor(float)";
    case DType::u8: return "tensor(uint8)";
    case DType::i8: return "tensor(int8)";
    case DType::i32: return "tensor(int32)";
    case DType::i64: return "tensor(int64)";
    case DType::boolean: return "tensor(bool)";
    default: return std::string("tensor(") + dtype_name(t) + ")";
  }
}

py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::f32: return py::dtype::of<float>();
    case DType::u8: return py::dtype::of<uint8_t>();
    case DType::i8: return py::dtype::of<int8_t>();
    case DType::i32: return py::dtype::of<int32_t>();
    case DType::i64: return py::dtype::of<int64_t>();
    case DType::boolean: return py::dtype::of<bool>();
    default: throw Error(std::string("tensors of type ") + dtype_name(t) + " cannot be passed to or from numpy");
  }
}

// A numpy array's memory as a Tensor of `want`'s dtype and shape, without a copy when it is
// C-contiguous and of that dtype (the array stays alive with the Tensor). ValueError names the input.
Tensor tensor_from_numpy(const py::handle& obj, const std::string& name, DType want, const Shape& shape) {
  py::array a = py::array::ensure(obj);
  if (!a) throw py::value_error("input '" + name + "' is not an array");
  const py::dtype dt = numpy_dtype(want);
  if (a.dtype().num() != dt.num())
    throw py::value_error("input '" + name + "' must be " + onnx_type_name(want) + " (numpy " +
                          std::string(py::str(py::object(dt))) + "), got numpy " + std::string(py::str(py::object(a.dtype()))));
  Shape got(a.shape(), a.shape() + a.ndim());
  if (got != shape)
    throw py::value_error("input '" + name + "' must have shape " + shape_str(shape) + ", got " + shape_str(got));
  if (!(a.flags() & py::array::c_style)) a = py::array::ensure(a, py::array::c_style);  // one copy, then shared
  auto keep = std::make_shared<py::object>(a);  // released under the GIL: see below
  std::shared_ptr<const void> owner(keep.get(), [keep](const void*) mutable {
    py::gil_scoped_acquire gil;
    keep.reset();
  });
  return Tensor::wrap(want, shape, a.data(), owner);
}

py::array tensor_to_numpy(const Tensor& t) {
  auto* held = new Tensor(t);
  py::capsule free(held, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> strides(t.shape().size());
  py::ssize_t stride = static_cast<py::ssize_t>(storage_bytes(t.dtype(), 1));
  for (size_t i = t.shape().size(); i-- > 0;) {
    strides[i] = stride;
    stride *= static_cast<py::ssize_t>(t.shape()[i]);
  }
  return py::array(numpy_dtype(t.dtype()), std::vector<py::ssize_t>(t.shape().begin(), t.shape().end()), strides,
                   held->raw(), free);
}

py::object json_to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

struct NodeArg {
  std::string name;
  std::vector<py::object> shape;
  std::string type;
};

NodeArg node_arg(const Value& v) {
  NodeArg a{v.name, {}, onnx_type_name(v.dtype)};
  for (int64_t d : v.shape) a.shape.push_back(py::int_(d));
  return a;
}

// Options shared by InferenceSession and quantize, from Python keywords.
BuildOptions build_options(const py::object& model, const std::string& precision, const std::string& target,
                           const py::object& threads, const py::dict& kw) {
  BuildOptions o;
  if (py::isinstance<py::bytes>(model)) {
    o.model_bytes = std::string(py::bytes(model));
    o.model = "<bytes>";
  } else {
    o.model = py::str(py::module_::import("os").attr("fspath")(model));
  }
  o.precision = parse_precision(precision);
  if (!target.empty() && target != "host") o.target = parse_target(target);
  o.compile.threads = threads.is_none() ? 0 : threads.cast<int>();
  const auto& keys = build_option_keys();
  for (auto [k, v] : kw) {
    const std::string key = py::str(k);
    if (key == "input_shapes") {
      for (auto [name, shape] : v.cast<py::dict>()) o.input_shapes[py::str(name)] = shape.cast<Shape>();
    } else if (key == "calibration_data") {
      // A list of {name: ndarray} dicts (python/lowbit/__init__.py turns readers into one).
      for (auto sample : v) {
        std::map<std::string, Tensor> named;
        for (auto [name, arr] : sample.cast<py::dict>()) {
          py::array a = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(arr);
          if (!a) throw py::value_error("calibration input '" + std::string(py::str(name)) + "' is not an array");
          Shape s(a.shape(), a.shape() + a.ndim());
          Tensor t(DType::f32, s);
          std::memcpy(t.raw(), a.data(), static_cast<size_t>(t.nbytes()));
          named[py::str(name)] = t;
        }
        o.named_samples.push_back(std::move(named));
      }
    } else if (std::find(keys.begin(), keys.end(), key) != keys.end() && key != "input_shape") {
      // The library's option keys (api/options.h), given as Python values: True/False, numbers,
      // strings, and (mean, std) as three numbers.
      std::string text;
      if (py::isinstance<py::bool_>(v)) text = v.cast<bool>() ? "true" : "false";
      else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
        for (auto x : v) text += (text.empty() ? "" : ",") + std::string(py::str(x));
      } else text = py::str(v);
      try {
        set_build_option(o, key, text);
      } catch (const Error& e) {
        throw py::value_error(e.what());
      }
    } else {
      throw py::type_error("unexpected keyword argument '" + key + "'");
    }
  }
  return o;
}

class Session {
 public:
  Session(const py::object& model, const std::string& precision, const std::string& target, const py::object& threads,
          const py::kwargs& kw)
      : name_(py::isinstance<py::bytes>(model) ? "<bytes>" : std::string(py::str(model))) {
    BuildOptions o = build_options(model, precision, target, threads, kw);
    py::gil_scoped_release nogil;  // compiling (and calibrating) takes a while
    built_ = build_model(o);
  }

  std::vector<NodeArg> inputs() const {
    std::vector<NodeArg> r;
    for (ValueId v : graph().inputs) r.push_back(node_arg(graph().value(v)));
    return r;
  }
  std::vector<NodeArg> outputs() const {
    std::vector<NodeArg> r;
    for (ValueId v : graph().outputs) r.push_back(node_arg(graph().value(v)));
    return r;
  }

  py::list run(const py::object& output_names, const py::dict& feeds) {
    const Graph& g = graph();
    std::vector<Tensor> in;
    for (ValueId v : g.inputs) {
      const Value& val = g.value(v);
      if (!feeds.contains(val.name)) {
        std::string names;
        for (ValueId w : g.inputs) names += (names.empty() ? "" : ", ") + g.value(w).name;
        throw py::value_error("input '" + val.name + "' is missing from the feeds (the model's inputs: " + names + ")");
      }
      in.push_back(tensor_from_numpy(feeds[py::str(val.name)], val.name, val.dtype, val.shape));
    }
    for (auto [k, _] : feeds) {
      const std::string key = py::str(k);
      bool known = false;
      for (ValueId v : g.inputs) known |= g.value(v).name == key;
      if (!known) throw py::value_error("feed '" + key + "' is not an input of the model");
    }
    std::vector<size_t> pick;
    if (output_names.is_none()) {
      for (size_t i = 0; i < g.outputs.size(); ++i) pick.push_back(i);
    } else {
      for (auto n : output_names) {
        const std::string want = py::str(n);
        size_t i = 0;
        while (i < g.outputs.size() && g.value(g.outputs[i]).name != want) ++i;
        if (i == g.outputs.size()) throw py::value_error("'" + want + "' is not an output of the model");
        pick.push_back(i);
      }
    }
    std::vector<Tensor> out;
    {
      py::gil_scoped_release nogil;
      out = built_.model->run(in);
    }
    in.clear();  // drops the numpy references (their deleters take the GIL themselves)
    py::list r;
    for (size_t i : pick) r.append(tensor_to_numpy(out[i]));
    return r;
  }

  // Per node, in run order: the api/describe.h rows (node, op, kernel, rejected: [{kernel, reason}], ...).
  py::object explain() const { return json_to_python(explain_json(built_, name_)["nodes"]); }

  // Sizes and the plan: api/describe.h's inspect_json.
  py::object inspect() const { return json_to_python(inspect_json(built_, name_)); }

  py::object benchmark(int runs, int warmup, const std::string& scenario, int requests, int streams) {
    if (runs < 1 || warmup < 0 || requests < 0 || streams < 0)
      throw py::value_error("benchmark: runs >= 1, warmup, requests and streams >= 0");
    const std::vector<Tensor> in = synthetic_inputs(graph(), 42);
    BenchOptions o;
    o.runs = runs, o.warmup = warmup, o.requests = requests, o.streams = streams;
    o.scenario = parse_bench_scenario(scenario);
    BenchResult r;
    {
      py::gil_scoped_release nogil;
      r = run_benchmark(*built_.model, in, o);
    }
    return json_to_python(bench_summary(*built_.model, name_, built_.precision, o, r, built_.build_ms));
  }

  void save(const std::string& path) const {
    // As `lowbit quantize` writes it: the compiled graph (optimised, quantized, kernels pinned by
    // autotuning) and the library's metadata.
    nlohmann::json meta = artifact_metadata(built_, name_);
    meta["written_by"] = "lowbit python";
    save_artifact(path, built_.model->graph(), meta.dump());
  }

  int contexts() const { return built_.model->contexts(); }
  const std::string& precision() const { return built_.precision; }

 private:
  const Graph& graph() const { return built_.model->graph(); }
  std::string name_;
  BuiltModel built_;
};

}  // namespace

PYBIND11_MODULE(_lowbit, m) {
  m.doc() = "lowbit: post-training quantization compiler and CPU inference runtime for CNNs";
  py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  m.attr("__version__") = LOWBIT_VERSION;

  py::class_<NodeArg>(m, "NodeArg")
      .def_readonly("name", &NodeArg::name)
      .def_readonly("shape", &NodeArg::shape)
      .def_readonly("type", &NodeArg::type)
      .def("__repr__", [](const NodeArg& a) {
        return "NodeArg(name='" + a.name + "', type='" + a.type + "', shape=" + std::string(py::repr(py::cast(a.shape))) +
               ")";
      });

  py::class_<Session>(m, "_Session")
      .def(py::init<const py::object&, const std::string&, const std::string&, const py::object&, const py::kwargs&>(),
           py::arg("model"), py::arg("precision") = "fp32", py::arg("target") = "host", py::arg("threads") = py::none())
      .def("get_inputs", &Session::inputs)
      .def("get_outputs", &Session::outputs)
      .def("run", &Session::run, py::arg("output_names"), py::arg("input_feed"))
      .def("explain", &Session::explain)
      .def("inspect", &Session::inspect)
      .def("benchmark", &Session::benchmark, py::arg("runs") = 100, py::arg("warmup") = 10,
           py::arg("scenario") = "single-stream", py::arg("requests") = 0, py::arg("streams") = 0)
      .def("save", &Session::save, py::arg("path"))
      .def_property_readonly("precision", &Session::precision)
      .def_property_readonly("_contexts", &Session::contexts);

  m.def("targets", [] {
    std::vector<std::string> t{"host"};
    for (auto& n : named_targets()) t.push_back(n);
    return t;
  });
}
