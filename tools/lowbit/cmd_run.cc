// lowbit run / export-onnx (fp32 zoo models; quantized models in QDQ form).
#include <cstdio>

#include "cli.h"
#include "lowbit/common/error.h"
#include "lowbit/artifact/artifact.h"
#if defined(LOWBIT_HAS_ONNX)
#include "lowbit/frontend/onnx/onnx_export.h"
#include "lowbit/frontend/onnx/onnx_export_qdq.h"
#endif
#include "lowbit/frontend/zoo/zoo.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/io/npy.h"

namespace lowbit::cli {

void register_run(CLI::App& app) {
  struct Opts {
    ModelOptions m;
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("run", "run a model once on .npy or image inputs (or a seeded random input)");
  add_model_options(*cmd, o->m);
  cmd->add_option("--input", o->inputs, "input .npy or .png/.jpg (see --mean/--std/--resize), one per model input");
  cmd->add_option("--output", o->outputs, "where to write output .npy files, one per model output");
  cmd->callback([o] {
    auto model = compile_model(o->m);
    const Graph& g = model->graph();
    std::vector<Tensor> in;
    if (o->inputs.empty()) {
      in = random_inputs(g);
    } else {
      if (o->inputs.size() != g.inputs.size())
        throw Error("model has " + std::to_string(g.inputs.size()) + " input(s); got " +
                    std::to_string(o->inputs.size()) + " --input file(s)");
      ImagePreprocess pre = image_preprocess(o->m);
      for (size_t i = 0; i < o->inputs.size(); ++i) in.push_back(load_input(o->inputs[i], g, i, pre));
    }
    auto out = model->run(in);
    for (size_t i = 0; i < out.size(); ++i) {
      const Value& v = g.value(g.outputs[i]);
      std::printf("output '%s': %s %s", v.name.c_str(), dtype_name(out[i].dtype()), shape_str(out[i].shape()).c_str());
      if (out[i].dtype() == DType::f32 && out[i].numel() > 0) {
        const float* d = out[i].data<float>();
        int64_t best = 0;
        for (int64_t k = 1; k < out[i].numel(); ++k)
          if (d[k] > d[best]) best = k;
        std::printf("  argmax %lld (%.4f)  first [", static_cast<long long>(best), d[best]);
        for (int64_t k = 0; k < std::min<int64_t>(5, out[i].numel()); ++k) std::printf("%s%.5f", k ? ", " : "", d[k]);
        std::printf("]");
      }
      std::printf("\n");
      if (i < o->outputs.size()) save_npy(o->outputs[i], out[i]);
    }
  });
}

void register_export(CLI::App& app) {
  struct Opts {
    ModelOptions m;
    std::string out;
    bool exact_types = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("export-onnx",
                                 "write a zoo model (fp32, as built in code, before passes) to ONNX, or a quantized "
                                 "model (an .lbm artifact, or MODEL with --precision int8) in QDQ form");
  add_model_options(*cmd, o->m);
  cmd->add_option("-o,--output", o->out, "output .onnx path")->required();
  cmd->add_flag("--exact-subbyte-types", o->exact_types,
                "sub-byte codes in their own ONNX types (opset 25: INT2 weights, UINT4 / UINT2 activations) instead "
                "of the form ONNX Runtime 1.30 runs (INT4 weights, QuantizeLinear + Clip activations)");
  cmd->callback([o] {
#if !defined(LOWBIT_HAS_ONNX)
    throw Error("export-onnx: this lowbit was built without ONNX support (LOWBIT_WITH_ONNX=OFF)");
#else
    const bool artifact = is_artifact_file(o->m.model);
    if (!artifact && o->m.precision == "fp32") {
      if (!is_zoo_model(o->m.model))
        throw Error("export-onnx takes a zoo model name (or an .lbm / --precision int8 for QDQ), got '" + o->m.model +
                    "'");
      export_onnx(build_zoo_model(o->m.model), o->out);
      std::printf("wrote %s\n", o->out.c_str());
      return;
    }
    BuiltModel b = build_model(o->m, /*foreign_ok=*/true);
    bool quantized = false;
    for (const Node& n : b.graph.nodes)
      quantized |= lowbit_quantized(n.op) ||
                   (n.op == "BinaryConv" && b.graph.value(n.inputs[0]).dtype == DType::u8);
    QdqExportOptions qo;
    qo.exact_subbyte_types = o->exact_types;
    if (quantized) export_onnx_qdq(b.graph, o->out, qo);
    else export_onnx(b.graph, o->out);
    std::string what = "fp32";
    if (quantized) {
      what = b.precision + ", QDQ";
      bool w4 = false, a4 = false;
      for (const Value& v : b.graph.values)
        if (v.quant && bit_width(code_dtype(v)) < 8 && code_dtype(v) != DType::b1) (v.constant ? w4 : a4) = true;
      if (o->exact_types && (w4 || a4)) {
        what += ", sub-byte codes in their ONNX types (INT4 / INT2 weights, UINT4 / UINT2 activations; opset 25)";
      } else {
        if (w4) what += ", INT4 weights (opset 21)";
        if (a4) what += ", activations below 8 bits as QuantizeLinear + Clip (QCDQ)";
      }
    }
    std::printf("wrote %s (%s)\n", o->out.c_str(), what.c_str());
#endif
  });
}

}  // namespace lowbit::cli
