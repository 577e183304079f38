// Quantizing for another architecture, as the study cross-compiled for AArch64 on x86-64: the plan
// an x86-64 lowbit makes for cortex-a72 / neoverse-n1 is the one the AArch64 build runs, and every
// arithmetic int8 node of the zoo models has a NEON kernel in it (the guard keeps none in fp32 and
// none runs on a reference kernel). Before, the x86-64 build rejected every NEON row as "not in
// this build", so `quantize --target cortex-a72` kept all 23 quantized nodes of ResNet-18 in fp32.
#include <gtest/gtest.h>

#include "lowbit/api/build.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/runtime/compiled_model.h"
#include "lowbit/target/target.h"
#include "small_models.h"

namespace lowbit {
namespace {

bool reads_or_writes_codes(const Graph& g, const Node& n) {
  for (const auto* ids : {&n.inputs, &n.outputs})
    for (ValueId v : *ids)
      if (v != kNoValue && !g.value(v).constant && g.value(v).dtype != DType::f32) return true;
  return false;
}

TEST(CrossTarget, EveryInt8NodeOfTheZooHasANeonKernelOnAArch64Targets) {
  for (const char* model : {"resnet18", "resnet50", "mobilenet_v2"})
    for (const char* target : {"cortex-a72", "neoverse-n1"}) {
      SCOPED_TRACE(std::string(model) + " for " + target);
      BuildOptions o = test::small_zoo(model);
      o.precision = kInt8;
      o.target = parse_target(target);
      o.allow_foreign_target = true;
      o.on_slow = SlowPolicy::error;  // a quantized node without a fast kernel fails the build
      const BuiltModel b = build_model(o);
      EXPECT_TRUE(b.slow.empty());
      const Graph& g = b.model->graph();
      int qconv = 0, conv = 0;
      for (const Step& s : b.model->steps()) {
        const Node& n = g.nodes[static_cast<size_t>(s.node)];
        qconv += n.op == "QConv";
        conv += n.op == "Conv";
        // Byte moves (Flatten, Reshape) are copies whatever kernel does them.
        if (!reads_or_writes_codes(g, n) || quant_passthrough(n.op) == QuantPassthrough::moves) continue;
        EXPECT_EQ(s.choice.chosen->name.rfind("reference", 0), std::string::npos) << n.label() << " runs "
                                                                                  << s.choice.chosen->name;
        EXPECT_EQ(s.choice.chosen->arch, Arch::aarch64) << n.label() << " runs " << s.choice.chosen->name;
      }
      EXPECT_GT(qconv, 0);
      EXPECT_EQ(conv, 0) << "convs left in fp32";
      // The plan is what the AArch64 build would run: NEON rows, and created only there.
      EXPECT_EQ(b.model->unrunnable_reason().empty(), host_target().arch == Arch::aarch64);
    }
}

}  // namespace
}  // namespace lowbit
