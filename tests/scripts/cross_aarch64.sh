#!/usr/bin/env bash
# The study's cross-compile experiment, end to end (TVM: relay.build for an AArch64 target on x86,
# the module run under qemu-aarch64): ResNet-18 quantized to int8 by the x86-64 lowbit with
# --target cortex-a72, the artifact run as it is by the AArch64 lowbit under `qemu-aarch64 -cpu
# cortex-a72` (NEON: the smlal kernels) and under `-cpu max` for the host (dot product: sdot), and
# by the x86-64 lowbit for its own CPU. The int8 kernels are exact, so all three outputs must be
# the same bits; explain must show the NEON kernels and no quantized node on a reference kernel.
# Usage: cross_aarch64.sh <x86-64 lowbit> <work-dir>   (scripts/test-aarch64.sh runs it)
set -euo pipefail
X86=${1:?usage: $0 <x86-64 lowbit> <work-dir>}
WORK=${2:?usage: $0 <x86-64 lowbit> <work-dir>}/cross_aarch64
RUN_ARM="bash $(cd "$(dirname "$0")/../.." && pwd)/scripts/run-aarch64.sh"
PY=/usr/bin/python3
fail() {
  echo "FAIL cross_aarch64: $*"
  exit 1
}
rm -rf "$WORK"
mkdir -p "$WORK"
m=$WORK/resnet18_int8_cortex-a72.lbm
"$X86" quantize resnet18 --precision int8 --target cortex-a72 --on-slow error --input-shape input=1x3x64x64 -o "$m" >"$WORK/quantize.log" 2>&1 ||
  { cat "$WORK/quantize.log"; fail "quantize --target cortex-a72"; }
$PY -c "import numpy as np; np.save('$WORK/x.npy', np.random.default_rng(7).standard_normal((1, 3, 64, 64)).astype(np.float32))"
"$X86" run "$m" --target host --input "$WORK/x.npy" --output "$WORK/y_x86.npy" >/dev/null
$RUN_ARM --cpu cortex-a72 lowbit run "$m" --input "$WORK/x.npy" --output "$WORK/y_a72.npy" >/dev/null ||
  fail "the AArch64 lowbit could not run the artifact under -cpu cortex-a72"
$RUN_ARM --cpu max lowbit run "$m" --target host --input "$WORK/x.npy" --output "$WORK/y_max.npy" >/dev/null ||
  fail "the AArch64 lowbit could not run the artifact under -cpu max"
# The plan the AArch64 build runs for the artifact: NEON rows, none of them reference code.
$RUN_ARM --cpu cortex-a72 lowbit explain "$m" --json "$WORK/explain.json" >/dev/null
$PY - "$WORK" <<'PYEOF' || fail "outputs differ or the plan is not NEON"
import json, sys
import numpy as np
w = sys.argv[1]
y = {k: np.load(f"{w}/y_{k}.npy") for k in ("x86", "a72", "max")}
for k in ("a72", "max"):
    assert y[k].shape == y["x86"].shape, (k, y[k].shape)
    assert y[k].tobytes() == y["x86"].tobytes(), f"{k}: max |diff| {np.abs(y[k] - y['x86']).max()}"
nodes = json.load(open(f"{w}/explain.json"))["nodes"]
neon = [n["kernel"] for n in nodes if n["kernel"].endswith("-neon")]
ref = [n["node"] + " " + n["kernel"] for n in nodes
       if n["kernel"].startswith("reference") and n["op"] not in ("Flatten", "Reshape")]
assert not ref, ref
assert len(neon) >= 20, neon
print(f"x86-64, cortex-a72 and max outputs identical ({y['x86'].size} values, argmax {int(y['x86'].argmax())}); "
      f"{len(neon)} NEON kernels in the plan")
PYEOF
echo "PASS cross_aarch64"
