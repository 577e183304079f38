// lowbit: post-training quantization compiler and CPU inference runtime for CNNs.
#include <cstdio>

#include "cli.h"
#include "lowbit/common/error.h"

int main(int argc, char** argv) {
  CLI::App app{"lowbit: quantize CNNs and run them fast on CPUs, and say why"};
  app.require_subcommand(1);
  lowbit::cli::register_run(app);
  lowbit::cli::register_bench(app);
  lowbit::cli::register_explain(app);
  lowbit::cli::register_inspect(app);
  lowbit::cli::register_targets(app);
  lowbit::cli::register_ops(app);
  lowbit::cli::register_export(app);
  lowbit::cli::register_quantize(app);
  lowbit::cli::register_compare(app);
  lowbit::cli::register_sensitivity(app);
  lowbit::cli::register_microbench(app);
  lowbit::cli::register_report(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const lowbit::Error& e) {
    std::fprintf(stderr, "lowbit: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lowbit: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
