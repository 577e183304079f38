#include "cli.h"

#include <cstdio>

#include "lowbit/common/error.h"
#include "lowbit/frontend/load_model.h"

namespace lowbit::cli {

void add_model_options(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("MODEL", o.model, "an .onnx file or a zoo model (resnet18, resnet50, mobilenet_v2)")->required();
  cmd.add_option("--input-shape", o.input_shapes, "fix an input's dynamic dims: name=1x3x224x224 (repeatable)");
  cmd.add_option("--threads", o.threads, "threads inside operators (default: all cores)");
  cmd.add_option("--target", o.target, "target to compile for (see `lowbit targets`; default host)");
  cmd.add_option("--precision", o.precision, "fp32")->check(CLI::IsMember({"fp32"}));
  cmd.add_flag("--no-optimize", o.no_optimize, "skip BN folding and fusion (debugging)");
}

std::unique_ptr<CompiledModel> compile_model(const ModelOptions& o, bool foreign_ok) {
  std::map<std::string, Shape> shapes;
  for (auto& s : o.input_shapes) shapes.insert(parse_input_shape(s));
  Graph g = load_model(o.model, shapes);
  CompileOptions opts;
  opts.target = parse_target(o.target);
  opts.threads = o.threads;
  opts.optimize = !o.no_optimize;
  opts.allow_foreign_target = foreign_ok;
  return CompiledModel::compile(std::move(g), opts);
}

std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed) {
  std::vector<Tensor> v;
  uint64_t s = seed;
  auto next = [&s] {  // splitmix64: portable, unlike <random> distributions
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  for (ValueId id : g.inputs) {
    const Value& val = g.value(id);
    Tensor t(val.dtype, val.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      double u = static_cast<double>(next() >> 11) / 9007199254740992.0;
      if (val.dtype == DType::f32) t.data<float>()[i] = static_cast<float>(2 * u - 1);
      else if (val.dtype == DType::i64) t.data<int64_t>()[i] = static_cast<int64_t>(u * 10);
      else if (val.dtype == DType::u8 || val.dtype == DType::boolean) t.data<uint8_t>()[i] = static_cast<uint8_t>(u * 2);
      else throw Error("cannot make a random input of dtype " + std::string(dtype_name(val.dtype)));
    }
    v.push_back(std::move(t));
  }
  return v;
}

std::string human_bytes(int64_t b) {
  char buf[64];
  if (b >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.2f MB", static_cast<double>(b) / 1e6);
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KB", static_cast<double>(b) / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
}

}  // namespace lowbit::cli
