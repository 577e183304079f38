#pragma once
// Shared pieces of the lowbit command line: model options and how each command registers.
#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lowbit/runtime/compiled_model.h"

namespace lowbit::cli {

struct ModelOptions {
  std::string model;
  std::vector<std::string> input_shapes;
  int threads = 0;
  std::string target = "host";
  std::string precision = "fp32";
  bool no_optimize = false;
};

// Adds MODEL and the options every model command shares.
void add_model_options(CLI::App& cmd, ModelOptions& o);
// Loads, validates, optimises and dispatches. `foreign_ok`: allow a target the host cannot run.
std::unique_ptr<CompiledModel> compile_model(const ModelOptions& o, bool foreign_ok = false);
// Seeded random inputs of the model's input shapes (deterministic, U(-1, 1) for floats).
std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed = 42);
std::string human_bytes(int64_t bytes);

void register_run(CLI::App& app);
void register_bench(CLI::App& app);
void register_explain(CLI::App& app);
void register_inspect(CLI::App& app);
void register_targets(CLI::App& app);
void register_export(CLI::App& app);

}  // namespace lowbit::cli
