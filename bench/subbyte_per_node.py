#!/usr/bin/python3
"""Sub-byte kernels, measured per node: for each model and precision, time every node in int8 and
in the sub-byte precision (`lowbit bench --profile --json`, same machine, one after the other),
and for every node that runs a sub-byte kernel report its speed-up over the same node's int8
kernel. The issue's bar: >= 1.3x wherever a sub-byte kernel is chosen, and no node slower than
int8 without a warning.

usage: bench/subbyte_per_node.py [--lowbit build/release/lowbit] [--models resnet50,resnet18,mobilenet_v2]
                                 [--precisions w4a8,w4a4,w2a2,w2a8] [--runs 10] [--threads 1] [--bar 1.3]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

SUBBYTE_KERNELS = ("qc4w", "qc2w", "qu4-", "qu2-")


def profile(lowbit, model, precision, runs, threads):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    cmd = [lowbit, "bench", model, "--precision", precision, "--profile", "--runs", str(runs), "--warmup", "2",
           "--threads", str(threads), "--json", path]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    with open(path) as f:
        data = json.load(f)
    os.unlink(path)
    return data, p.stderr + p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lowbit", default="build/release/lowbit")
    ap.add_argument("--models", default="resnet50,resnet18,mobilenet_v2")
    ap.add_argument("--precisions", default="w4a8,w4a4,w2a2,w2a8")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--bar", type=float, default=1.3)
    a = ap.parse_args()
    below_total = 0
    for model in a.models.split(","):
        i8, _ = profile(a.lowbit, model, "int8", a.runs, a.threads)
        i8_ms = {l["node"]: l for l in i8["layers"]}
        for prec in a.precisions.split(","):
            q, out = profile(a.lowbit, model, prec, a.runs, a.threads)
            rows, sub_ms, ref_ms = [], 0.0, 0.0
            for l in q["layers"]:
                if not any(k in l["kernel"] for k in SUBBYTE_KERNELS):
                    continue
                ref = i8_ms.get(l["node"])
                if ref is None:
                    continue
                rows.append((ref["ms"] / l["ms"], l, ref))
                sub_ms += l["ms"]
                ref_ms += ref["ms"]
            rows.sort(key=lambda r: r[0])
            below = [r for r in rows if r[0] < a.bar]
            below_total += len(below)
            total = f"{ref_ms / sub_ms:.2f}x" if sub_ms else "-"
            vs = q.get("vs_int8", {})
            print(f"{model} {prec}: {len(rows)} node(s) on sub-byte kernels, together {total} faster than their "
                  f"int8 kernels ({ref_ms:.2f} -> {sub_ms:.2f} ms); whole model {vs.get('speedup', 0):.2f}x vs int8 "
                  f"(same run); {len(below)} below {a.bar}x")
            for s, l, ref in below:
                print(f"    {l['node']:<28} {l['kernel']:<36} {l['ms']:.3f} ms vs {ref['kernel']} {ref['ms']:.3f} ms: {s:.2f}x")
    sys.exit(0)


if __name__ == "__main__":
    main()
