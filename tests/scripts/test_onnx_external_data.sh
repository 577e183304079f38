#!/usr/bin/env bash
# ONNX models saved with external data, as ONNX's own writer lays them out (onnx.save_model with
# save_as_external_data=True: one data file beside the model, every initializer in it at
# unaligned offsets, or one file per tensor): lowbit runs each and gives the bits it gives the same
# model with its tensors inline, in fp32 and int8; the model copied elsewhere without its data file,
# and a data file reached through a symlink out of the folder, are refused naming the tensor.
# Usage: test_onnx_external_data.sh LOWBIT_BINARY WORK_DIR
set -euo pipefail
LOWBIT=$(realpath "$1")
WORK=$2/onnx_external_data
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=/usr/bin/python3
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

"$PY" "$ROOT/tests/python/export_torchvision.py" resnet18 inline
"$PY" - <<'PYEOF'
import os
import onnx
m = onnx.load("inline/model.onnx")
os.makedirs("one_file", exist_ok=True)
onnx.save_model(m, "one_file/model.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                location="model.onnx.data", size_threshold=0)
m = onnx.load("inline/model.onnx")
os.makedirs("per_tensor", exist_ok=True)
onnx.save_model(m, "per_tensor/model.onnx", save_as_external_data=True, all_tensors_to_one_file=False,
                size_threshold=1024)
ext = onnx.load("one_file/model.onnx", load_external_data=False)
n = sum(1 for t in ext.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL)
print(f"one_file/model.onnx: {os.path.getsize('one_file/model.onnx')} bytes, {n} external initializers")
assert n > 50
PYEOF

same() {  # same A.npy B.npy LABEL: bit-identical outputs
  "$PY" -c "import numpy as np, sys; a, b = np.load('$1'), np.load('$2'); sys.exit(0 if a.tobytes() == b.tobytes() else 1)" ||
    { echo "FAIL $3: outputs differ"; exit 1; }
  echo "ok $3: bit-identical"
}
for prec in fp32 int8; do
  "$LOWBIT" run inline/model.onnx --precision $prec --threads 1 --input inline/in.npy --output inline_$prec.npy
  for layout in one_file per_tensor; do
    "$LOWBIT" run $layout/model.onnx --precision $prec --threads 1 --input inline/in.npy --output ${layout}_$prec.npy
    same inline_$prec.npy ${layout}_$prec.npy "$layout $prec vs inline"
  done
done

expect_refusal() {  # expect_refusal LABEL PATTERN MODEL
  if "$LOWBIT" run "$3" --threads 1 > out.txt 2>&1; then echo "FAIL $1: ran"; exit 1; fi
  grep -q -- "$2" out.txt || { echo "FAIL $1: message lacks '$2':"; cat out.txt; exit 1; }
  echo "ok $1: $(grep -m1 -- "$2" out.txt)"
}
mkdir -p moved && cp one_file/model.onnx moved/
expect_refusal "data file missing" "cannot be opened" moved/model.onnx
mkdir -p escape && cp one_file/model.onnx escape/ && ln -sf "$WORK/one_file/model.onnx.data" escape/model.onnx.data
expect_refusal "symlink out of the folder" "outside the model's folder" escape/model.onnx
echo "test_onnx_external_data: all passed"
