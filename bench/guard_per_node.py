#!/usr/bin/python3
"""The guard's promise, measured: for each model and target, time every node in fp32 and in int8
(`lowbit bench --profile --json`, same machine, one after the other) and list the nodes whose int8
kernel is slower than the fp32 kernel of the same node, and whether lowbit warned about them.

usage: bench/guard_per_node.py [--lowbit build/release/lowbit] [--models resnet50,resnet18,mobilenet_v2]
                               [--targets x86-64,x86-64-v3] [--runs 10] [--threads 1] [--tolerance 1.10]
                               [--on-slow fp32|allow]

--on-slow allow runs every quantized node on its int8 kernel, the guard's rules included: the way to
re-measure a rule (a rule whose nodes are no longer slower is stale).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def profile(lowbit, model, precision, target, runs, warmup, threads, on_slow="fp32"):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    cmd = [lowbit, "bench", model, "--precision", precision, "--target", target, "--profile",
           "--runs", str(runs), "--warmup", str(warmup), "--threads", str(threads), "--json", path]
    if precision != "fp32":
        cmd += ["--on-slow", on_slow]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    with open(path) as f:
        data = json.load(f)
    os.unlink(path)
    return data, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lowbit", default="build/release/lowbit")
    ap.add_argument("--models", default="resnet50,resnet18,mobilenet_v2")
    ap.add_argument("--targets", default="x86-64,x86-64-v3")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1,
                    help="per-node times are steadiest on one thread (a busy second core skews them)")
    ap.add_argument("--tolerance", type=float, default=1.10,
                    help="int8 counts as slower when int8_ms > tolerance * fp32_ms (timing noise)")
    ap.add_argument("--on-slow", default="fp32", choices=["fp32", "allow"])
    a = ap.parse_args()
    silent_total = 0
    for target in a.targets.split(","):
        # Portable reference kernels are slow: fewer runs where the guard keeps them.
        runs = max(2, a.runs // 5) if target == "x86-64" else a.runs
        for model in a.models.split(","):
            fp, _ = profile(a.lowbit, model, "fp32", target, runs, 1, a.threads)
            q, warnings = profile(a.lowbit, model, "int8", target, runs, 1, a.threads, a.on_slow)
            fp_ms = {l["node"]: l for l in fp["layers"]}
            slower, silent, quantized = [], [], 0
            for l in q["layers"]:
                ref = fp_ms.get(l["node"])
                if ref is None:
                    continue  # Quantize/Dequantize: domain boundaries, reported by inspect
                is_int8 = l["kernel"] != ref["kernel"]
                quantized += is_int8
                # Nodes of a few microseconds are within timer noise either way.
                if is_int8 and l["ms"] > a.tolerance * ref["ms"] and l["ms"] - ref["ms"] > 0.005:
                    slower.append(l)
                    if l["node"] not in warnings:
                        silent.append(l)
            extra = sum(l["ms"] for l in q["layers"] if l["node"] not in fp_ms)
            silent_total += len(silent)
            print(f"{model:13s} target {target:10s} fp32 {fp['median_ms']:9.2f} ms  int8 {q['median_ms']:9.2f} ms  "
                  f"({fp['median_ms'] / q['median_ms']:.2f}x)  nodes on int8 kernels {quantized:3d}  "
                  f"slower than fp32 {len(slower)}  of which silent {len(silent)}  boundary ops {extra:.2f} ms")
            for l in slower:
                r = fp_ms[l["node"]]
                print(f"    {l['node']:30s} int8 {l['kernel']} {l['ms']:.3f} ms vs fp32 {r['kernel']} {r['ms']:.3f} ms"
                      f"{'  (warned)' if l not in silent else '  SILENT'}")
    print(f"\nnodes slower in int8 without a warning: {silent_total}")
    return 1 if silent_total else 0


if __name__ == "__main__":
    sys.exit(main())
