#!/usr/bin/python3
"""Where lowbit loses or wins against ONNX Runtime, node by node (issue 14's analysis; not a test).

Runs the same model on both, back to back on the same CPUs: lowbit's per-layer profile
(`lowbit bench --profile --json`) and ORT's own profiler (bench/ort_bench.mjs --profile), then
matches the nodes and prints, worst first, each node's median time on both and the difference,
and the sums per lowbit kernel.

Matching: lowbit names a node after the ONNX node it came from (a Conv keeps its name when its
BatchNormalization and activation are fused into it). ORT renames fused and re-laid-out nodes
after their output (`<output>_nchwc`); such a name is traced back through the ONNX graph, over
the single-input nodes ORT folds into a conv (BatchNormalization, Relu, Clip, ...), to the Conv
or Gemm it came from. ORT nodes with no ONNX counterpart (layout reorders) are listed apart.

int8: `--precision int8` quantizes the model with lowbit (synthetic calibration), and ORT runs
lowbit's QDQ export of the artifact, as bench/breadth_vs_ort.py does; ORT's QLinear nodes are
named after the QDQ graph, so fewer of them match.

usage: bench/per_node_vs_ort.py MODEL.onnx [--threads 1] [--cpus 0] [--runs 60] [--top 25]
           [--precision fp32|int8] [--input-shape x=1x3x640x640] [--lowbit build/release/lowbit]
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# Single-input nodes ORT fuses into the conv before them (or that a layout pass absorbs).
FOLDED = {"BatchNormalization", "Relu", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish", "Sigmoid", "Identity",
          "QuantizeLinear", "DequantizeLinear"}


def run(cmd, cpus):
    p = subprocess.run(cmd, capture_output=True, text=True,
                       preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def ort_node_ms(profile):
    """Median kernel time per ORT node name over every profiled run."""
    per = collections.defaultdict(list)
    for e in json.load(open(profile)):
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            per[e["name"][: -len("_kernel_time")]].append(e["dur"] / 1000.0)
    return {n: statistics.median(v) for n, v in per.items()}


def onnx_index(path):
    """name -> node, and output tensor -> producing node, of the ONNX graph."""
    g = onnx.load(path, load_external_data=False).graph
    by_name = {n.name: n for n in g.node if n.name}
    producer = {o: n for n in g.node for o in n.output}
    return by_name, producer


def trace_back(name, by_name, producer):
    """The Conv / Gemm an ORT node name stands for, or None."""
    # ORT's QDQ fusion names the QLinearConv it makes from a Conv "<conv name>_token_<n>".
    name = re.sub(r"_token_\d+$", "", name)
    for suffix in ("_nchwc", ""):
        if suffix and not name.endswith(suffix):
            continue
        base = name[: len(name) - len(suffix)] if suffix else name
        node = by_name.get(base) or producer.get(base)
        seen = 0
        while node is not None and node.op_type in FOLDED and seen < 8:
            node = producer.get(node.input[0]) if node.input else None
            seen += 1
        if node is not None:
            return node.name or node.output[0]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--lowbit", default=os.path.join(ROOT, "build/release/lowbit"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cpus", default=None, help="CPUs for both runtimes, e.g. 0 or 0,1 (default: the first "
                    "THREADS CPUs when there are more, else any)")
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--precision", choices=["fp32", "int8"], default="fp32")
    ap.add_argument("--input-shape", default=None, help="for models with dynamic input dims: NAME=1x3xHxW")
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(HERE, "node_modules", "onnxruntime-node")):
        sys.exit("onnxruntime-node is missing: run bench/bench_vs_ort.sh once (it installs it into bench/)")
    allowed = sorted(os.sched_getaffinity(0))
    cpus = {int(c) for c in a.cpus.split(",")} if a.cpus else (set(allowed[: a.threads])
                                                             if a.threads < len(allowed) else None)
    shape = ["--input-shape", a.input_shape] if a.input_shape else []
    with tempfile.TemporaryDirectory() as tmp:
        lb_model, ort_model = a.model, a.model
        if a.precision == "int8":
            lb_model, ort_model = os.path.join(tmp, "m.lbm"), os.path.join(tmp, "m_qdq.onnx")
            run([a.lowbit, "quantize", a.model, "-o", lb_model] + shape, None)
            run([a.lowbit, "export-onnx", lb_model, "-o", ort_model], None)
        feed = []
        if a.input_shape:
            dims = [int(d) for d in a.input_shape.split("=")[1].split("x")]
            npy = os.path.join(tmp, "x.npy")
            run(["/usr/bin/python3", "-c", f"import numpy as np; np.save({npy!r}, "
                 f"np.random.default_rng(1).standard_normal({dims}).astype(np.float32))"], None)
            feed = ["--input", npy]
        o = run(["node", os.path.join(HERE, "ort_bench.mjs"), ort_model, "--threads", str(a.threads), "--runs",
                 str(a.runs), "--profile", os.path.join(tmp, "ort")] + feed, cpus)
        ort_run = json.loads(o.stdout.strip().splitlines()[-1])
        lb_json = os.path.join(tmp, "lb.json")
        run([a.lowbit, "bench", lb_model, "--threads", str(a.threads), "--runs", str(a.runs), "--profile",
             "--json", lb_json] + (shape if lb_model.endswith(".onnx") else []), cpus)
        lb = json.load(open(lb_json))
        ort = ort_node_ms(ort_run["profile"])
        by_name, producer = onnx_index(ort_model)

    ort_by_node = collections.defaultdict(float)
    unmatched = {}
    for n, ms in ort.items():
        key = trace_back(n, by_name, producer)
        if key is None:
            unmatched[n] = ms
        else:
            ort_by_node[key] += ms
    rows = []
    for layer in lb["layers"]:
        o = ort_by_node.pop(layer["node"], None)
        rows.append((layer["ms"], o, layer["node"], layer["kernel"], layer["macs"]))
    for n, ms in ort_by_node.items():  # ORT nodes lowbit folded away or named otherwise
        unmatched[n] = unmatched.get(n, 0.0) + ms

    host = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"{a.model} ({a.precision}), {a.threads} thread(s), CPUs {sorted(cpus) if cpus else 'any'}, host {host}")
    print(f"whole run, median: lowbit {lb['median_ms']:.3f} ms, ORT {ort_run['median_ms']:.3f} ms "
          f"(ratio {lb['median_ms'] / ort_run['median_ms']:.2f}; profiled runs, so both a little slow)")
    lb_sum = sum(r[0] for r in rows)
    print(f"sum of node medians: lowbit {lb_sum:.3f} ms, ORT {sum(ort.values()):.3f} ms")
    by_kernel = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for ms, o, _, kernel, _ in rows:
        k = by_kernel[kernel]
        k[0] += ms
        k[1] += o or 0.0
        k[2] += 1
    print("\nper lowbit kernel: nodes, lowbit ms, ORT ms on the same nodes")
    for kernel, (l, o, n) in sorted(by_kernel.items(), key=lambda kv: -kv[1][0]):
        print(f"  {kernel:48s} {n:4d} {l:8.3f} {o:8.3f}")
    print(f"\nnodes, largest lowbit - ORT first (top {a.top}):")
    print(f"  {'diff':>7s} {'lowbit':>7s} {'ORT':>7s}  {'MMACs':>6s}  node / kernel")
    matched = [r for r in rows if r[1] is not None]
    for ms, o, node, kernel, macs in sorted(matched, key=lambda r: r[1] - r[0])[: a.top]:
        print(f"  {ms - o:+7.3f} {ms:7.3f} {o:7.3f}  {macs / 1e6:6.1f}  {node}  {kernel}")
    alone = [r for r in rows if r[1] is None]
    if alone:
        print(f"\nlowbit nodes with no ORT node matched: {len(alone)}, {sum(r[0] for r in alone):.3f} ms")
        for ms, _, node, kernel, _ in sorted(alone, reverse=True)[:8]:
            print(f"  {ms:7.3f}  {node}  {kernel}")
    if unmatched:
        print(f"\nORT nodes with no lowbit node matched: {len(unmatched)}, {sum(unmatched.values()):.3f} ms")
        for n, ms in sorted(unmatched.items(), key=lambda kv: -kv[1])[:8]:
            print(f"  {ms:7.3f}  {n}")


if __name__ == "__main__":
    main()
