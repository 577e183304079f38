// The C API (include/lowbit/lowbit.h) over the library's front door (api/build.h, api/options.h,
// api/describe.h, api/bench.h). Every entry point runs its body in guarded(): C++ exceptions become
// statuses here and nowhere else, so no exception unwinds into a C caller's frames.
#include "lowbit/lowbit.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "lowbit/api/bench.h"
#include "lowbit/api/build.h"
#include "lowbit/api/describe.h"
#include "lowbit/api/options.h"
#include "lowbit/artifact/artifact.h"
#include "lowbit/common/error.h"
#include "lowbit/common/log.h"
#include "lowbit/common/settings.h"
#include "lowbit/io/synthetic.h"
#include "lowbit/target/target.h"

struct lowbit_status {
  lowbit_code code;
  std::string message;
};

struct lowbit_options {
  lowbit::BuildOptions build;
};

struct lowbit_session {
  std::string name;
  lowbit::BuiltModel built;
  // The compiled graph's inputs and outputs: immutable for the session's life, so the names and
  // shapes lowbit_session_input / _output return point into them.
  const lowbit::Graph& graph() const { return built.model->graph(); }
  size_t inputs() const { return graph().inputs.size(); }
  size_t outputs() const { return graph().outputs.size(); }
  const lowbit::Value& input(size_t i) const { return graph().value(graph().inputs[i]); }
  const lowbit::Value& output(size_t i) const { return graph().value(graph().outputs[i]); }
};

namespace {

using namespace lowbit;

// Returned when a status itself cannot be allocated; lowbit_status_free leaves it alone.
lowbit_status g_out_of_memory{LOWBIT_OUT_OF_MEMORY, "out of memory"};

lowbit_status* make_status(lowbit_code code, const std::string& message) noexcept {
  try {
    return new lowbit_status{code, message};
  } catch (...) {
    return &g_out_of_memory;
  }
}

struct InvalidArgument {
  std::string message;
};

template <class F>
lowbit_status* guarded(F&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const InvalidArgument& e) {
    return make_status(LOWBIT_INVALID_ARGUMENT, e.message);
  } catch (const Error& e) {
    return make_status(LOWBIT_ERROR, e.what());
  } catch (const std::bad_alloc&) {
    return &g_out_of_memory;
  } catch (const std::exception& e) {
    return make_status(LOWBIT_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return make_status(LOWBIT_INTERNAL, "internal error: an unknown exception");
  }
}

void require(bool ok, const std::string& what) {
  if (!ok) throw InvalidArgument{what};
}

char* copy_string(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

lowbit_dtype c_dtype(DType t) {
  switch (t) {
    case DType::f32: return LOWBIT_FLOAT32;
    case DType::u8: return LOWBIT_UINT8;
    case DType::i8: return LOWBIT_INT8;
    case DType::i32: return LOWBIT_INT32;
    case DType::i64: return LOWBIT_INT64;
    case DType::boolean: return LOWBIT_BOOL;
    default: throw Error(std::string("a model input or output of type ") + dtype_name(t) + " has no C API type");
  }
}

const char* c_dtype_name(lowbit_dtype t) {
  switch (t) {
    case LOWBIT_FLOAT32: return "float32";
    case LOWBIT_UINT8: return "uint8";
    case LOWBIT_INT8: return "int8";
    case LOWBIT_INT32: return "int32";
    case LOWBIT_INT64: return "int64";
    case LOWBIT_BOOL: return "bool";
  }
  return "an unknown dtype";
}

std::string c_shape_str(const lowbit_tensor& t) {
  std::string s;
  for (size_t i = 0; i < t.rank; ++i) s += (i ? "x" : "") + std::to_string(t.shape[i]);
  return t.rank ? s : "a scalar";
}

// Checks a caller's tensor against the model's value `kind` `name`: dtype, shape, pointer, size.
void check_tensor(const lowbit_tensor& t, const char* kind, const std::string& name, DType dt, const Shape& shape) {
  const lowbit_dtype dtype = c_dtype(dt);
  const std::string who = std::string(kind) + " '" + name + "'";
  require(t.dtype == dtype,
          who + " must be " + c_dtype_name(dtype) + ", got " + c_dtype_name(t.dtype));
  require(t.rank == 0 || t.shape, who + ": shape is NULL with rank " + std::to_string(t.rank));
  require(t.rank == shape.size() && std::equal(shape.begin(), shape.end(), t.shape),
          who + " must have shape " + shape_str(shape) + ", got " + (t.rank > 64 ? "rank " + std::to_string(t.rank) : c_shape_str(t)));
  const size_t bytes = static_cast<size_t>(storage_bytes(dt, num_elements(shape)));
  require(t.size_bytes >= bytes, who + " needs " + std::to_string(bytes) + " bytes, the buffer has " +
                                     std::to_string(t.size_bytes));
}

}  // namespace

extern "C" {

lowbit_code lowbit_status_code(const lowbit_status* s) { return s ? s->code : LOWBIT_OK; }
const char* lowbit_status_message(const lowbit_status* s) { return s ? s->message.c_str() : ""; }
void lowbit_status_free(lowbit_status* s) {
  if (s != &g_out_of_memory) delete s;
}

const char* lowbit_version(void) { return LOWBIT_VERSION; }
void lowbit_free(void* p) { std::free(p); }

void lowbit_set_log_callback(lowbit_log_fn fn, void* user) {
  if (!fn) {
    set_log_sink({});
    return;
  }
  set_log_sink([fn, user](LogLevel level, const std::string& message) {
    const lowbit_log_level l = level == LogLevel::warning ? LOWBIT_LOG_WARNING
                               : level == LogLevel::note  ? LOWBIT_LOG_NOTE
                                                          : LOWBIT_LOG_TRACE;
    fn(l, message.c_str(), user);
  });
}

lowbit_status* lowbit_set_isa_cap(const char* isa) {
  return guarded([&] {
    require(isa, "lowbit_set_isa_cap: isa is NULL (\"\" removes the cap)");
    const std::string before = settings().isa_cap;
    set_isa_cap(isa);
    try {
      host_target();  // refuses an unknown level
    } catch (...) {
      set_isa_cap(before);
      throw;
    }
  });
}

lowbit_status* lowbit_targets(char** names_out) {
  return guarded([&] {
    require(names_out, "lowbit_targets: names_out is NULL");
    std::string s = "host";
    for (const std::string& n : named_targets()) s += "\n" + n;
    *names_out = copy_string(s);
  });
}

lowbit_status* lowbit_options_create(lowbit_options** out) {
  return guarded([&] {
    require(out, "lowbit_options_create: out is NULL");
    *out = new lowbit_options;
  });
}

void lowbit_options_free(lowbit_options* o) { delete o; }

lowbit_status* lowbit_options_set(lowbit_options* o, const char* key, const char* value) {
  return guarded([&] {
    require(o && key && value, "lowbit_options_set: options, key and value must not be NULL");
    set_build_option(o->build, key, value);
  });
}

}  // extern "C"

namespace {

lowbit_status* create_session(BuildOptions b, const std::string& name, lowbit_session** out) {
  return guarded([&] {
    require(out, "lowbit_session_create: out is NULL");
    *out = nullptr;
    auto s = std::make_unique<lowbit_session>();
    s->name = name;
    s->built = build_model(b);
    // Refuses a type C cannot pass at creation rather than at run.
    for (size_t i = 0; i < s->inputs(); ++i) c_dtype(s->input(i).dtype);
    for (size_t i = 0; i < s->outputs(); ++i) c_dtype(s->output(i).dtype);
    *out = s.release();
  });
}

lowbit_status* report(const lowbit_session* s, char** json_out, const char* fn,
                      const std::function<nlohmann::json()>& make) {
  return guarded([&] {
    require(s && json_out, std::string(fn) + ": session and json_out must not be NULL");
    *json_out = copy_string(make().dump(2));
  });
}

}  // namespace

extern "C" {

lowbit_status* lowbit_session_create(const char* model, const lowbit_options* options, lowbit_session** out) {
  if (!model) return make_status(LOWBIT_INVALID_ARGUMENT, "lowbit_session_create: model is NULL");
  lowbit_status* st = nullptr;
  BuildOptions b;
  st = guarded([&] {
    if (options) b = options->build;
    b.model = model;
  });
  return st ? st : create_session(std::move(b), model, out);
}

lowbit_status* lowbit_session_create_from_onnx(const void* bytes, size_t size, const lowbit_options* options,
                                               lowbit_session** out) {
  if (!bytes || !size) return make_status(LOWBIT_INVALID_ARGUMENT, "lowbit_session_create_from_onnx: no bytes");
  BuildOptions b;
  lowbit_status* st = guarded([&] {
    if (options) b = options->build;
    b.model = "<bytes>";
    b.model_bytes.assign(static_cast<const char*>(bytes), size);
  });
  return st ? st : create_session(std::move(b), "<bytes>", out);
}

void lowbit_session_free(lowbit_session* s) { delete s; }

size_t lowbit_session_input_count(const lowbit_session* s) { return s ? s->inputs() : 0; }
size_t lowbit_session_output_count(const lowbit_session* s) { return s ? s->outputs() : 0; }

lowbit_status* lowbit_session_input(const lowbit_session* s, size_t i, lowbit_tensor_info* out) {
  return guarded([&] {
    require(s && out, "lowbit_session_input: session and out must not be NULL");
    require(i < s->inputs(), "lowbit_session_input: index " + std::to_string(i) + " of " +
                                 std::to_string(s->inputs()) + " inputs");
    const Value& v = s->input(i);
    *out = {v.name.c_str(), c_dtype(v.dtype), v.shape.size(), v.shape.data()};
  });
}

lowbit_status* lowbit_session_output(const lowbit_session* s, size_t i, lowbit_tensor_info* out) {
  return guarded([&] {
    require(s && out, "lowbit_session_output: session and out must not be NULL");
    require(i < s->outputs(), "lowbit_session_output: index " + std::to_string(i) + " of " +
                                  std::to_string(s->outputs()) + " outputs");
    const Value& v = s->output(i);
    *out = {v.name.c_str(), c_dtype(v.dtype), v.shape.size(), v.shape.data()};
  });
}

lowbit_status* lowbit_session_run(const lowbit_session* s, const lowbit_tensor* inputs, size_t input_count,
                                  lowbit_tensor* outputs, size_t output_count) {
  return guarded([&] {
    require(s, "lowbit_session_run: session is NULL");
    require(input_count == s->inputs(), "lowbit_session_run: the model has " + std::to_string(s->inputs()) +
                                            " input(s), " + std::to_string(input_count) + " given");
    require(output_count == s->outputs(), "lowbit_session_run: the model has " + std::to_string(s->outputs()) +
                                              " output(s), " + std::to_string(output_count) + " given");
    require(!input_count || inputs, "lowbit_session_run: inputs is NULL");
    require(!output_count || outputs, "lowbit_session_run: outputs is NULL");
    std::vector<Tensor> in;
    in.reserve(input_count);
    for (size_t i = 0; i < input_count; ++i) {
      const Value& v = s->input(i);
      check_tensor(inputs[i], "input", v.name, v.dtype, v.shape);
      require(inputs[i].data, "input '" + v.name + "': data is NULL");
      // Read in place: the caller's buffer outlives the call.
      in.push_back(Tensor::wrap(v.dtype, v.shape, inputs[i].data, nullptr));
    }
    for (size_t i = 0; i < output_count; ++i)
      if (outputs[i].data)
        check_tensor(outputs[i], "output", s->output(i).name, s->output(i).dtype, s->output(i).shape);
    const std::vector<Tensor> out = s->built.model->run(in);
    for (size_t i = 0; i < output_count; ++i)
      if (outputs[i].data) std::memcpy(outputs[i].data, out[i].raw(), static_cast<size_t>(out[i].nbytes()));
  });
}

lowbit_status* lowbit_session_explain(const lowbit_session* s, char** json_out) {
  return report(s, json_out, "lowbit_session_explain", [&] { return explain_json(s->built, s->name); });
}

lowbit_status* lowbit_session_inspect(const lowbit_session* s, char** json_out) {
  return report(s, json_out, "lowbit_session_inspect", [&] { return inspect_json(s->built, s->name); });
}

lowbit_status* lowbit_session_benchmark(const lowbit_session* s, int runs, int warmup, char** json_out) {
  return report(s, json_out, "lowbit_session_benchmark", [&] {
    require(runs >= 1 && warmup >= 0, "lowbit_session_benchmark: runs >= 1 and warmup >= 0");
    const std::vector<Tensor> in = synthetic_inputs(s->built.model->graph(), 42);
    BenchOptions o;
    o.runs = runs, o.warmup = warmup;
    return bench_summary(*s->built.model, s->name, s->built.precision, o, run_benchmark(*s->built.model, in, o),
                         s->built.build_ms);
  });
}

lowbit_status* lowbit_session_save(const lowbit_session* s, const char* path) {
  return guarded([&] {
    require(s && path, "lowbit_session_save: session and path must not be NULL");
    nlohmann::json meta = artifact_metadata(s->built, s->name);
    meta["written_by"] = "lowbit C API";
    save_artifact(path, s->built.model->graph(), meta.dump());
  });
}

}  // extern "C"
