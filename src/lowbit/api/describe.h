#pragma once
// What a compiled model is, as data: the plan with every rejected kernel and why (explain) and the
// graph after passes with its sizes (inspect). `lowbit explain --json`, the CLI's tables, the
// Python package's explain()/inspect() and the C API's JSON all come from here, so a field has
// one name and one meaning wherever it is read.
#include <string>

#include <nlohmann/json.hpp>

#include "lowbit/api/build.h"

namespace lowbit {

// {model, target, features, caches, precision, nodes: [{node, label, op, inputs, outputs,
//  signature, macs, kernel, rejected: [{kernel, reason}], note?}]}: one row per step, in run order.
// `note` says why an imported QDQ group was kept as imported (not fused into lowbit's int8 form).
nlohmann::json explain_json(const BuiltModel& b, const std::string& model_name);

// {model, precision, target, features, threads, steps, macs, weight_bytes, weight_bytes_by_dtype,
//  kernel_weight_bytes (null for a target this CPU cannot run), peak_activation_bytes, domain_changes, compile_ms,
//  slow_nodes: [{node, op, kernel, reason}] (the guard's findings),
//  nodes: [{node, op, op_label, inputs, outputs, signature, quant, macs, weight_bytes}]}.
// op_label marks fused epilogues (Conv+clamp, Conv+add) and fp32<->u8 domain changes.
nlohmann::json inspect_json(const BuiltModel& b, const std::string& model_name);

// "u8(u4),i4,f32->u8(u4)  w4a4": storage dtypes, with the codes in parentheses where they are
// narrower, and the node's precision where it has one.
std::string node_signature(const Graph& g, const Node& n);
// The shapes of `ids` ("1x64x56x56 1x64x56x56"), constants left out when `skip_constants`.
std::string value_shapes(const Graph& g, const std::vector<ValueId>& ids, bool skip_constants);

}  // namespace lowbit
