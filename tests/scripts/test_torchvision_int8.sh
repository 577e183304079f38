#!/usr/bin/env bash
# int8 end to end on torchvision ResNet-18/50 and MobileNetV2 (seeded random weights, randomised BN
# statistics; exported by tests/python/export_torchvision.py). For each model:
#   - `lowbit compare --precision int8` (8 synthetic calibration inputs, 8 other synthetic inputs to
#     compare on): cosine mean of the int8 logits vs fp32 >= 0.99;
#   - `lowbit quantize`: the .lbm artifact is >= 3.9x smaller than the ONNX file's fp32 weights
#     (3.5x for MobileNetV2: its depthwise layers have 9 weights per channel, so the per-channel
#     f32 bias and scale weigh as much as the int8 weights themselves).
# Usage: test_torchvision_int8.sh <lowbit-binary> <work-dir> [model...]
set -euo pipefail
LOWBIT=${1:?usage: $0 <lowbit-binary> <work-dir> [model...]}
WORK=${2:?usage: $0 <lowbit-binary> <work-dir> [model...]}
shift 2
MODELS=("$@")
[[ ${#MODELS[@]} -gt 0 ]] || MODELS=(resnet18 resnet50 mobilenet_v2)
PY=/usr/bin/python3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYDIR=$HERE/../python
WORK=$WORK/torchvision_int8
mkdir -p "$WORK"
MIN_COSINE=0.99
MIN_RATIO=3.9

failures=0
summary=()
for m in "${MODELS[@]}"; do
  d=$WORK/$m
  echo "== $m: PyTorch export"
  "$PY" "$PYDIR/export_torchvision.py" "$m" "$d"

  echo "== $m: lowbit compare --precision int8 --calib-samples 8 --samples 8"
  if ! "$LOWBIT" compare "$d/model.onnx" --precision int8 --calib-samples 8 --samples 8 --layers 5 | tee "$d/compare.txt"; then
    echo "FAIL $m: lowbit compare exited with an error"
    failures=$((failures + 1))
    continue
  fi
  cosine=$(sed -n 's/.*cosine mean \([0-9.]*\).*/\1/p' "$d/compare.txt" | head -n1)
  if [[ -z $cosine ]]; then
    echo "FAIL $m: no 'cosine mean' in lowbit compare's output"
    failures=$((failures + 1))
    continue
  fi
  cos_ok=$(awk -v c="$cosine" -v t="$MIN_COSINE" 'BEGIN { print (c >= t) ? 1 : 0 }')

  echo "== $m: lowbit quantize"
  rm -f "$d/model.lbm"
  if ! "$LOWBIT" quantize "$d/model.onnx" -o "$d/model.lbm" --calib-samples 8; then
    echo "FAIL $m: lowbit quantize exited with an error"
    failures=$((failures + 1))
    continue
  fi
  weights=$("$PY" "$PYDIR/onnx_weight_bytes.py" "$d/model.onnx")
  lbm=$(stat -c %s "$d/model.lbm")
  ratio=$(awk -v w="$weights" -v l="$lbm" 'BEGIN { printf "%.2f", w / l }')
  min_ratio=$MIN_RATIO
  [[ $m == mobilenet_v2 ]] && min_ratio=3.5
  size_ok=$(awk -v r="$ratio" -v t="$min_ratio" 'BEGIN { print (r >= t) ? 1 : 0 }')

  verdict=ok
  if [[ $cos_ok != 1 ]]; then
    verdict="FAIL cosine < $MIN_COSINE"
    failures=$((failures + 1))
  fi
  if [[ $size_ok != 1 ]]; then
    verdict="FAIL size ratio < $min_ratio"
    failures=$((failures + 1))
  fi
  summary+=("$(printf '%-13s %9s %14s %14s %7sx  %s' "$m" "$cosine" "$weights" "$lbm" "$ratio" "$verdict")")
done

echo
printf '%-13s %9s %14s %14s %8s  %s\n' model "cos mean" "fp32 weights B" ".lbm bytes" ratio result
for row in "${summary[@]}"; do echo "$row"; done
echo "(need cosine mean >= $MIN_COSINE and fp32 weights / .lbm >= $MIN_RATIO; 3.5 for mobilenet_v2)"
if [[ $failures -ne 0 ]]; then
  echo "test_torchvision_int8: $failures check(s) failed"
  exit 1
fi
echo "test_torchvision_int8: all passed"
