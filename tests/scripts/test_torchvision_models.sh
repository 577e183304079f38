#!/usr/bin/env bash
# End-to-end oracle: torchvision ResNet-18/50 and MobileNetV2 (seeded random weights, randomised BN
# statistics, BatchNormalization kept in the ONNX file) exported by PyTorch and run by `lowbit run`
# with the default thread count, 1 and 2 threads. Pass: relative L2 error vs PyTorch <= 1e-4.
# Usage: test_torchvision_models.sh <lowbit-binary> <work-dir> [model...]
set -euo pipefail
LOWBIT=${1:?usage: $0 <lowbit-binary> <work-dir> [model...]}
WORK=${2:?usage: $0 <lowbit-binary> <work-dir> [model...]}
shift 2
MODELS=("$@")
[[ ${#MODELS[@]} -gt 0 ]] || MODELS=(resnet18 resnet50 mobilenet_v2)
PY=/usr/bin/python3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYDIR=$HERE/../python
WORK=$WORK/torchvision_models
mkdir -p "$WORK"

failures=0
for m in "${MODELS[@]}"; do
  d=$WORK/$m
  echo "== $m: PyTorch export"
  "$PY" "$PYDIR/export_torchvision.py" "$m" "$d"
  for threads in default 1 2; do
    out=$d/out_$threads.npy
    args=(run "$d/model.onnx" --input "$d/in.npy" --output "$out")
    [[ $threads == default ]] || args+=(--threads "$threads")
    echo "== $m: lowbit ${args[*]}"
    rm -f "$out"
    if ! "$LOWBIT" "${args[@]}"; then
      echo "FAIL $m threads=$threads: lowbit run exited with an error"
      failures=$((failures + 1))
      continue
    fi
    "$PY" "$PYDIR/compare_npy.py" "$d/ref.npy" "$out" --tol 1e-4 --label "$m threads=$threads vs PyTorch" ||
      failures=$((failures + 1))
  done
done
if [[ $failures -ne 0 ]]; then
  echo "test_torchvision_models: $failures comparison(s) failed"
  exit 1
fi
echo "test_torchvision_models: all passed"
