#!/usr/bin/env bash
# lowbit vs ONNX Runtime (CPU, onnxruntime-node) on torchvision ResNet-50, fp32, 1 and 2 threads.
# Both run on the same ONNX file (exported here with PyTorch, seeded) back to back, with 10
# warm-ups and 100 timed runs; the table compares medians. Run it on an idle machine (see uptime).
# Usage: bench/bench_vs_ort.sh [BUILD_DIR=build/release] [WORK_DIR=BUILD_DIR/bench-vs-ort]
# On a shared machine a neighbour can slow one runtime's series and not the other's: the series
# alternate (ORT, lowbit, ORT, lowbit, ...) for ROUNDS rounds, and the table gives each runtime's
# median over its rounds' medians (and the best round, the least disturbed).
# Env: RUNS (100), WARMUP (10), THREADS ("1 2"), ROUNDS (3), ORT_VERSION (latest on npm when installing),
#      F32_PEAK_GFLOPS (single-core f32 FMA peak; else measured with BUILD_DIR/bench/microbench/f32_peak).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=${1:-build/release}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
WORK=${2:-$BUILD/bench-vs-ort}
RUNS=${RUNS:-100}
WARMUP=${WARMUP:-10}
THREADS=${THREADS:-"1 2"}
ROUNDS=${ROUNDS:-3}
PY=/usr/bin/python3
LOWBIT=$BUILD/lowbit
PEAK_BIN=$BUILD/bench/microbench/f32_peak
GFLOP=8.18  # ResNet-50 at 224x224: 4.09 GMACs

[[ -x $LOWBIT ]] || { echo "no lowbit binary at $LOWBIT (build first, or pass the build dir)" >&2; exit 1; }
command -v node >/dev/null || { echo "node is required for onnxruntime-node" >&2; exit 1; }
mkdir -p "$WORK"

echo "== machine: $(nproc) cores, load:$(uptime | sed 's/.*load average://')"
load1=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }'; then
  echo "WARNING: 1-minute load average is $load1: the machine is not idle, timings will be noisy"
fi

# onnxruntime-node ships its CPU library inside the package; skip the install script (it only
# fetches optional GPU binaries). --no-save keeps bench/ free of package.json churn.
if [[ ! -d $HERE/node_modules/onnxruntime-node ]]; then
  ver=${ORT_VERSION:-$(npm view onnxruntime-node version)}
  echo "== installing onnxruntime-node@$ver into $HERE/node_modules"
  (cd "$HERE" && ONNXRUNTIME_NODE_INSTALL=skip ONNXRUNTIME_NODE_INSTALL_CUDA=skip \
    npm install --no-save --no-package-lock --no-audit --no-fund "onnxruntime-node@$ver")
fi

MODEL=$WORK/resnet50/model.onnx
if [[ ! -f $MODEL ]]; then
  echo "== exporting torchvision resnet50 (seeded) to $MODEL"
  "$PY" "$ROOT/tests/python/export_torchvision.py" resnet50 "$WORK/resnet50"
fi

# Same numbers first: both runtimes on the seeded input against PyTorch.
echo "== correctness on the benchmark model"
node "$HERE/ort_bench.mjs" "$MODEL" --input "$WORK/resnet50/in.npy" --output "$WORK/resnet50/ort_out.npy" \
  --warmup 0 --runs 0 >/dev/null
"$PY" "$ROOT/tests/python/compare_npy.py" "$WORK/resnet50/ref.npy" "$WORK/resnet50/ort_out.npy" --label "ORT vs PyTorch"
"$LOWBIT" run "$MODEL" --input "$WORK/resnet50/in.npy" --output "$WORK/resnet50/lowbit_out.npy"
"$PY" "$ROOT/tests/python/compare_npy.py" "$WORK/resnet50/ref.npy" "$WORK/resnet50/lowbit_out.npy" \
  --label "lowbit vs PyTorch"

peak=${F32_PEAK_GFLOPS:-}
if [[ -z $peak && -x $PEAK_BIN ]]; then
  echo "== $PEAK_BIN"
  "$PEAK_BIN" | tee "$WORK/f32_peak.txt"
  # Accept either JSON ("gflops": N) or text ("N GFLOP/s"); the first figure is the 1-core peak.
  peak=$(grep -oE '"(peak_)?gflops"[[:space:]]*:[[:space:]]*[0-9.]+' "$WORK/f32_peak.txt" |
           head -1 | grep -oE '[0-9.]+$' ||
         grep -oiE '[0-9]+(\.[0-9]+)?[[:space:]]*GFLOP/?s' "$WORK/f32_peak.txt" | head -1 | grep -oE '^[0-9.]+' || true)
  [[ -n $peak ]] || echo "(could not read a GFLOP/s figure from f32_peak's output)"
fi

for t in $THREADS; do
  for r in $(seq 1 "$ROUNDS"); do
    echo "== threads=$t round $r/$ROUNDS: ONNX Runtime (intra-op $t, inter-op 1, graph optimisation 'all'), $WARMUP warm-ups + $RUNS runs"
    node "$HERE/ort_bench.mjs" "$MODEL" --threads "$t" --warmup "$WARMUP" --runs "$RUNS" --json "$WORK/ort_t${t}_r$r.json"
    echo "== threads=$t round $r/$ROUNDS: lowbit bench"
    "$LOWBIT" bench "$MODEL" --threads "$t" --warmup "$WARMUP" --runs "$RUNS" --json "$WORK/lowbit_t${t}_r$r.json" |
      grep -E "median"
  done
done

"$PY" - "$WORK" "$GFLOP" "${peak:-0}" "$ROUNDS" $THREADS <<'PYEOF'
import json, statistics, sys
work, gflop, peak, rounds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
threads = [int(t) for t in sys.argv[5:]]
load = lambda p: json.load(open(p))
med = {(rt, t): [load(f"{work}/{rt}_t{t}_r{r}.json")["median_ms"] for r in range(1, rounds + 1)]
       for rt in ("ort", "lowbit") for t in threads}
version = load(f"{work}/ort_t{threads[0]}_r1.json").get("version")
runs = load(f"{work}/ort_t{threads[0]}_r1.json")["runs"]
for title, pick in (("median over rounds", statistics.median), ("best round", min)):
    print()
    print(f"ResNet-50 fp32, batch 1, 224x224 ({gflop} GFLOP); median of {runs} runs per round, {rounds} alternating rounds: {title}")
    hdr = f"{'threads':>7} {'ORT ms':>9} {'lowbit ms':>10} {'lowbit/ORT':>10} {'ORT GFLOP/s':>12} {'lowbit GFLOP/s':>15}"
    if peak > 0:
        hdr += f" {'lowbit %peak':>12}"
    print(hdr)
    sel = {k: pick(v) for k, v in med.items()}
    for t in threads:
        om, lm = sel[("ort", t)], sel[("lowbit", t)]
        line = f"{t:>7} {om:>9.2f} {lm:>10.2f} {lm / om:>10.2f} {gflop / om * 1e3:>12.1f} {gflop / lm * 1e3:>15.1f}"
        if peak > 0:
            line += f" {100 * gflop / lm * 1e3 / (peak * t):>11.1f}%"
        print(line)
    if 1 in threads and 2 in threads:
        print(f"2-thread speed-up: ORT {sel[('ort', 1)] / sel[('ort', 2)]:.2f}x, "
              f"lowbit {sel[('lowbit', 1)] / sel[('lowbit', 2)]:.2f}x")
print()
print("every round's medians (ms):")
for (rt, t), v in sorted(med.items()):
    print(f"  {rt:>6} threads={t}: " + " ".join(f"{x:.2f}" for x in v))
if peak > 0:
    print(f"(% of peak against {peak:.1f} GFLOP/s per core x threads)")
print(f"ORT version: {version}")
PYEOF
