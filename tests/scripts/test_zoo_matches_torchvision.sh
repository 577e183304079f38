#!/usr/bin/env bash
# Proves lowbit's built-in zoo models are torchvision's architectures: `lowbit export-onnx MODEL`
# must give constants matching torchvision's state_dict 1:1 (keys and shapes); torchvision loaded
# with them must agree with `lowbit run MODEL` (the graph built in code) and with `lowbit run` of
# the exported file (export -> import round trip). Pass: relative L2 error <= 1e-4.
# Usage: test_zoo_matches_torchvision.sh <lowbit-binary> <work-dir> [model...]
set -euo pipefail
LOWBIT=${1:?usage: $0 <lowbit-binary> <work-dir> [model...]}
WORK=${2:?usage: $0 <lowbit-binary> <work-dir> [model...]}
shift 2
MODELS=("$@")
[[ ${#MODELS[@]} -gt 0 ]] || MODELS=(resnet18 resnet50 mobilenet_v2)
PY=/usr/bin/python3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYDIR=$HERE/../python
WORK=$WORK/zoo_matches_torchvision
mkdir -p "$WORK"

failures=0
for m in "${MODELS[@]}"; do
  d=$WORK/$m
  mkdir -p "$d"
  echo "== $m: lowbit export-onnx $m -o $d/zoo.onnx"
  rm -f "$d/zoo.onnx"
  "$LOWBIT" export-onnx "$m" -o "$d/zoo.onnx"
  "$PY" "$PYDIR/zoo_vs_torchvision.py" "$m" "$d/zoo.onnx" "$d"
  for model in "$m" "$d/zoo.onnx"; do
    out=$d/out_$(basename "$model" .onnx).npy
    echo "== $m: lowbit run $model --input $d/in.npy --output $out"
    rm -f "$out"
    if ! "$LOWBIT" run "$model" --input "$d/in.npy" --output "$out"; then
      echo "FAIL $m: lowbit run $model exited with an error"
      failures=$((failures + 1))
      continue
    fi
    "$PY" "$PYDIR/compare_npy.py" "$d/ref.npy" "$out" --tol 1e-4 \
      --label "lowbit run $(basename "$model") vs torchvision" ||
      failures=$((failures + 1))
  done
done
if [[ $failures -ne 0 ]]; then
  echo "test_zoo_matches_torchvision: $failures comparison(s) failed"
  exit 1
fi
echo "test_zoo_matches_torchvision: all passed"
