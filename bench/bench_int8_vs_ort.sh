#!/usr/bin/env bash
# lowbit int8 vs ONNX Runtime int8 (CPU, onnxruntime-node) on ResNet-50, 1 and 2 threads.
# ResNet-50 is quantized by lowbit (u8 activations per tensor, i8 weights per output channel) and
# exported as QDQ ONNX, which ORT fuses into its own int8 kernels (QLinearConv / QLinearAdd / QGemm):
# both runtimes run the same quantized network. Per thread count, back to back: ORT int8 on the QDQ
# file, `lowbit bench` on the .lbm (int8) and on the zoo model (fp32); 10 warm-ups + 100 timed runs
# each, medians compared, in ROUNDS alternating rounds (a neighbour on a shared machine can slow one
# series and not the next): the table gives the median over rounds and the best round. Run it on an
# idle machine (see uptime).
# Usage: bench/bench_int8_vs_ort.sh [BUILD_DIR=build/release] [WORK_DIR=BUILD_DIR/bench-int8-vs-ort]
# Env: RUNS (100), WARMUP (10), THREADS ("1 2"), ROUNDS (3), CALIB_SAMPLES (8), ORT_VERSION (latest on npm
# when installing).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=${1:-build/release}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
WORK=${2:-$BUILD/bench-int8-vs-ort}
RUNS=${RUNS:-100}
WARMUP=${WARMUP:-10}
THREADS=${THREADS:-"1 2"}
ROUNDS=${ROUNDS:-3}
CALIB_SAMPLES=${CALIB_SAMPLES:-8}
PY=/usr/bin/python3
LOWBIT=$BUILD/lowbit

[[ -x $LOWBIT ]] || { echo "no lowbit binary at $LOWBIT (build first, or pass the build dir)" >&2; exit 1; }
command -v node >/dev/null || { echo "node is required for onnxruntime-node" >&2; exit 1; }
mkdir -p "$WORK"

echo "== machine: $(nproc) cores, load:$(uptime | sed 's/.*load average://')"
load1=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }'; then
  echo "WARNING: 1-minute load average is $load1: the machine is not idle, timings will be noisy"
fi

# Same install as bench_vs_ort.sh: the CPU library ships inside the package.
if [[ ! -d $HERE/node_modules/onnxruntime-node ]]; then
  ver=${ORT_VERSION:-$(npm view onnxruntime-node version)}
  echo "== installing onnxruntime-node@$ver into $HERE/node_modules"
  (cd "$HERE" && ONNXRUNTIME_NODE_INSTALL=skip ONNXRUNTIME_NODE_INSTALL_CUDA=skip \
    npm install --no-save --no-package-lock --no-audit --no-fund "onnxruntime-node@$ver")
fi

LBM=$WORK/resnet50_int8.lbm
QDQ=$WORK/resnet50_int8_qdq.onnx
# Quantized afresh every time (a few seconds): an artifact from an older build may not load.
echo "== quantizing resnet50 with lowbit ($CALIB_SAMPLES synthetic calibration samples)"
"$LOWBIT" quantize resnet50 -o "$LBM" --calib-samples "$CALIB_SAMPLES"
echo "== exporting $LBM as QDQ ONNX"
"$LOWBIT" export-onnx "$LBM" -o "$QDQ"

echo "== correctness: ORT and lowbit on the same input"
"$PY" -c "import numpy as np; np.save('$WORK/in.npy', np.random.default_rng(5).standard_normal((1, 3, 224, 224)).astype(np.float32))"
node "$HERE/ort_bench.mjs" "$QDQ" --input "$WORK/in.npy" --output "$WORK/ort_out.npy" --warmup 0 --runs 0 >/dev/null
"$LOWBIT" run "$LBM" --input "$WORK/in.npy" --output "$WORK/lowbit_out.npy" >/dev/null
"$PY" - "$WORK/ort_out.npy" "$WORK/lowbit_out.npy" <<'EOF'
import sys
import numpy as np
a, b = (np.load(p).ravel().astype(np.float64) for p in sys.argv[1:3])
print(f"ORT int8 (QDQ) vs lowbit int8 (.lbm): cosine {a @ b / np.linalg.norm(a) / np.linalg.norm(b):.6f}, "
      f"top-1 {a.argmax()} vs {b.argmax()}")
EOF

for t in $THREADS; do
  for r in $(seq 1 "$ROUNDS"); do
    echo "== threads=$t round $r/$ROUNDS: ONNX Runtime int8 (QDQ; intra-op $t, graph optimisation 'all'), $WARMUP warm-ups + $RUNS runs"
    node "$HERE/ort_bench.mjs" "$QDQ" --threads "$t" --warmup "$WARMUP" --runs "$RUNS" --json "$WORK/ort_int8_t${t}_r$r.json"
    echo "== threads=$t round $r/$ROUNDS: lowbit int8"
    "$LOWBIT" bench "$LBM" --threads "$t" --warmup "$WARMUP" --runs "$RUNS" --json "$WORK/lowbit_int8_t${t}_r$r.json" |
      grep -E "warm-up"
    echo "== threads=$t round $r/$ROUNDS: lowbit fp32"
    "$LOWBIT" bench resnet50 --threads "$t" --warmup "$WARMUP" --runs "$RUNS" --json "$WORK/lowbit_fp32_t${t}_r$r.json" |
      grep -E "warm-up"
  done
done

"$PY" - "$WORK" "$ROUNDS" $THREADS <<'PYEOF'
import json, statistics, sys
work, rounds, threads = sys.argv[1], int(sys.argv[2]), [int(t) for t in sys.argv[3:]]
med = lambda t, k: [json.load(open(f"{work}/{k}_t{t}_r{r}.json"))["median_ms"] for r in range(1, rounds + 1)]
print()
print(f"ResNet-50, batch 1, 224x224, int8 = u8 activations / s8 per-channel weights; {rounds} alternating rounds")
for title, pick in (("median over rounds of each series' median", statistics.median),
                    ("best round (least disturbed: a check on a busy machine)", min)):
    print(f"-- {title}")
    print(f"{'threads':>7} {'ORT int8 ms':>12} {'lowbit int8 ms':>15} {'lowbit fp32 ms':>15} "
          f"{'lowbit int8 / ORT int8':>23} {'lowbit int8 speed-up vs fp32':>29}")
    for t in threads:
        o, q, f = (pick(med(t, k)) for k in ("ort_int8", "lowbit_int8", "lowbit_fp32"))
        print(f"{t:>7} {o:>12.2f} {q:>15.2f} {f:>15.2f} {q / o:>23.2f} {f / q:>28.2f}x")
print("every round's medians (ms):")
for t in threads:
    for k in ("ort_int8", "lowbit_int8", "lowbit_fp32"):
        print(f"  {k:>12} threads={t}: " + " ".join(f"{x:.2f}" for x in med(t, k)))
print("(lowbit int8 / ORT int8 < 1 means lowbit is faster)")
print(f"ORT version: {json.load(open(f'{work}/ort_int8_t{threads[0]}_r1.json')).get('version')}")
PYEOF
