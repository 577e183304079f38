#include "lowbit/dispatch/registry.h"

#include <algorithm>
#include <mutex>

#include "lowbit/common/error.h"
#include "lowbit/dispatch/table_qu8.h"
#include "lowbit/ir/op_schema.h"
#include "lowbit/kernels/reference/reference.h"

namespace lowbit {
namespace {

// Adapts a reference function to the Kernel interface: the portable fallback of every op.
class ReferenceKernel final : public Kernel {
 public:
  ReferenceKernel(const Graph& g, const Node& n, ReferenceFn fn) : g_(g), n_(n), fn_(fn) {}
  void run(std::span<const TensorView> in, std::span<const TensorView> out, ThreadPool&) const override {
    fn_(g_, n_, in, out);
  }

 private:
  const Graph& g_;
  const Node& n_;
  ReferenceFn fn_;
};

std::string reference_check(const NodeContext&) { return ""; }

std::unique_ptr<Kernel> reference_create(const NodeContext& ctx) {
  return std::make_unique<ReferenceKernel>(ctx.graph, ctx.node, find_reference(ctx.node.op));
}

// The fast candidates of the tables (fp32: table.cc, int8: table_qu8.cc) followed by one reference candidate per op with a reference
// kernel; built once, so candidate pointers stay valid for the process lifetime.
const std::vector<KernelCandidate>& full_table() {
  static const std::vector<KernelCandidate> table = [] {
    std::vector<KernelCandidate> t = all_candidates();
    for (auto& c : qu8_candidates()) t.push_back(c);
    for (const std::string& op : supported_ops())
      if (find_reference(op))
        t.push_back(KernelCandidate{op, "reference-" + op, Arch::x86_64, {}, reference_check, reference_create});
    return t;
  }();
  return table;
}

std::string join_features(const std::vector<Feature>& fs) {
  std::string s;
  for (Feature f : fs) s += (s.empty() ? "" : "+") + std::string(feature_name(f));
  return s;
}

}  // namespace

std::vector<const KernelCandidate*> candidates_for(std::string_view op) {
  std::vector<const KernelCandidate*> v;
  for (const auto& c : full_table())
    if (c.op == op) v.push_back(&c);
  return v;
}

const KernelCandidate* find_candidate(std::string_view name) {
  for (const auto& c : full_table())
    if (c.name == name) return &c;
  return nullptr;
}

std::string candidate_rejection(const KernelCandidate& c, const NodeContext& ctx) {
  std::string r = candidate_cannot_run(c, ctx);
  if (r.empty() && c.steps_aside)
    if (std::string why = c.steps_aside(ctx); !why.empty()) r = "applies, but steps aside: " + why;
  return r;
}

std::string candidate_cannot_run(const KernelCandidate& c, const NodeContext& ctx) {
  if (!c.features.empty() && c.arch != ctx.target.arch)
    return std::string("needs ") + (c.arch == Arch::x86_64 ? "x86-64" : "aarch64") + ": target is " +
           (ctx.target.arch == Arch::x86_64 ? "x86-64" : "aarch64");
  std::string lacking;
  for (Feature f : c.features)
    if (!ctx.target.has(f)) lacking += (lacking.empty() ? "" : ", ") + std::string(feature_name(f));
  if (!lacking.empty()) return "needs " + join_features(c.features) + ": target " + ctx.target.name + " lacks " + lacking;
  // Another architecture's row (its create is not in this build) is judged by its check all the
  // same: quantizing for --target cortex-a72 on x86-64 must see the NEON rows the AArch64 build
  // will create, or every quantized node looks kernel-less and the guard keeps it in fp32. The
  // compiled model chooses such a row but never creates it (CompiledModel::compile).
  return c.check(ctx);
}

Choice select_kernel(const NodeContext& ctx) {
  Choice choice;
  const std::string pinned = ctx.node.attrs.get_string(kPinnedKernelAttr, "");
  const KernelCandidate* pin = nullptr;
  if (!pinned.empty())
    for (const KernelCandidate* c : candidates_for(ctx.node.op))
      if (c->name == pinned && candidate_cannot_run(*c, ctx).empty()) pin = c;  // measured: speed rules aside
  if (pin) choice.chosen = pin;
  for (const KernelCandidate* c : candidates_for(ctx.node.op)) {
    if (c == pin) continue;
    std::string reason = candidate_cannot_run(*c, ctx);
    // A row that could run the node but measured slower here (autotuning still tries it).
    if (reason.empty() && c->steps_aside)
      if (std::string r = c->steps_aside(ctx); !r.empty()) reason = "applies, but steps aside: " + r;
    if (reason.empty() && pin) reason = "applies, but autotuning pinned " + pin->name + " for this node";
    if (reason.empty() && choice.chosen) reason = "applies, but ranked below " + choice.chosen->name;
    if (reason.empty())
      choice.chosen = c;
    else
      choice.rejected.push_back({c, reason});
  }
  if (!pinned.empty() && !pin)
    choice.rejected.insert(choice.rejected.begin(),
                           {find_candidate(pinned) ? find_candidate(pinned) : choice.chosen,
                            "pinned kernel '" + pinned + "' does not apply on target " + ctx.target.name});
  if (!choice.chosen) {
    std::string why;
    for (auto& r : choice.rejected) why += "\n  " + r.candidate->name + ": " + r.reason;
    throw Error("node " + ctx.node.label() + ": no kernel can run it" + (why.empty() ? " (no candidates)" : why));
  }
  return choice;
}

bool KernelCandidate::reads_codes(std::optional<DType> input, std::optional<DType> weights) const {
  auto has = [](const std::vector<DType>& v, std::optional<DType> t) {
    return !t || v.empty() || std::find(v.begin(), v.end(), *t) != v.end();
  };
  return subbyte() && has(subbyte_codes.input, input) && has(subbyte_codes.weights, weights);
}

}  // namespace lowbit
