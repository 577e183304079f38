#!/usr/bin/env bash
# QDQ interop with ONNX Runtime (onnxruntime-node, CPU):
#  1. resnet18 quantized by lowbit -> `export-onnx` (QDQ) -> ORT and lowbit on the same input:
#     cosine >= 0.999 (lowbit runs both the .lbm and the exported file);
#  2. a QDQ model built by another tool (here by hand with onnx.helper: per-channel i8 weights,
#     i32 biases, u8 and i8 activations) -> ORT and lowbit: cosine >= 0.999, and `lowbit explain`
#     shows every conv as QConv on a SIMD int8 kernel.
# Usage: test_qdq_ort.sh LOWBIT_BINARY WORK_DIR  (skips, exit 0, when node / onnxruntime-node are absent)
set -euo pipefail
LOWBIT=$(realpath "$1")
WORK=$2/qdq_ort
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=/usr/bin/python3
ORT_RUN=$ROOT/bench/ort_bench.mjs
mkdir -p "$WORK"
cd "$WORK"

if ! command -v node >/dev/null || [[ ! -d $ROOT/bench/node_modules/onnxruntime-node ]]; then
  echo "SKIP: needs node and onnxruntime-node in bench/node_modules" \
       "(scripts/install-deps.sh installs it)"
  # In CI the install script has run: a missing ONNX Runtime is a failure, not a skip.
  [[ -n ${CI:-} ]] && { echo "FAIL: CI=$CI but ONNX Runtime is missing"; exit 1; }
  exit 0
fi

cosine_check() {  # cosine_check LABEL A.npy B.npy
  "$PY" - "$@" <<'EOF'
import sys
import numpy as np
label, a, b = sys.argv[1], np.load(sys.argv[2]).ravel().astype(np.float64), np.load(sys.argv[3]).ravel().astype(np.float64)
cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
print(f"{label}: cosine {cos:.6f}, max |diff| {np.abs(a - b).max():.4g}, argmax {a.argmax()} vs {b.argmax()}")
sys.exit(0 if cos >= 0.999 else 1)
EOF
}

fail=0

echo "== 1. lowbit-quantized resnet18 -> QDQ ONNX -> ONNX Runtime"
"$LOWBIT" quantize resnet18 -o r18.lbm --calib-samples 4
"$LOWBIT" export-onnx r18.lbm -o r18_qdq.onnx
"$PY" - <<'EOF'
import numpy as np
import onnx
onnx.checker.check_model(onnx.load("r18_qdq.onnx"))
np.save("r18_in.npy", np.random.default_rng(3).standard_normal((1, 3, 224, 224)).astype(np.float32))
EOF
node "$ORT_RUN" r18_qdq.onnx --input r18_in.npy --output r18_ort.npy --warmup 0 --runs 0 >/dev/null
"$LOWBIT" run r18.lbm --input r18_in.npy --output r18_lowbit.npy
"$LOWBIT" run r18_qdq.onnx --input r18_in.npy --output r18_lowbit_qdq.npy
cosine_check "ORT (QDQ export) vs lowbit (.lbm)" r18_ort.npy r18_lowbit.npy || fail=1
cosine_check "ORT (QDQ export) vs lowbit (the same QDQ file)" r18_ort.npy r18_lowbit_qdq.npy || fail=1

echo "== 2. a QDQ model from another tool -> lowbit"
"$PY" - <<'EOF'
# A small CNN, quantized the way ONNX Runtime's quantize_static writes it: activations per tensor
# (u8, and i8 for one tensor), weights i8 symmetric per output channel (axis 0), biases i32 in
# units of s_x * s_w, ranges calibrated on a few seeded inputs with PyTorch.
import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

torch.manual_seed(0)
net = torch.nn.ModuleDict({
    "conv1": torch.nn.Conv2d(3, 16, 3, padding=1),
    "conv2": torch.nn.Conv2d(16, 16, 3, padding=1, groups=16),
    "conv3": torch.nn.Conv2d(16, 32, 1),
    "fc": torch.nn.Linear(32, 10),
}).eval()

def forward(x):
    a1 = torch.relu(net["conv1"](x))
    a2 = torch.relu(net["conv2"](a1))
    a3 = net["conv3"](a2)
    a4 = torch.nn.functional.max_pool2d(a3, 2)
    g = a4.mean(dim=(2, 3))
    return {"x": x, "a1": a1, "a2": a2, "a3": a3, "a4": a4, "g": g, "y": net["fc"](g)}

with torch.no_grad():
    calib = [forward(torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(s))) for s in range(4)]
rng = {k: (min(0.0, min(float(c[k].min()) for c in calib)), max(0.0, max(float(c[k].max()) for c in calib)))
       for k in calib[0]}

inits, nodes = [], []
def const(name, arr):
    inits.append(numpy_helper.from_array(np.asarray(arr), name))
    return name

def qparams(key, signed):
    lo, hi = rng[key]
    scale = np.float32((hi - lo) / 255.0)
    zp = int(np.clip(round(-lo / float(scale)), 0, 255)) - (128 if signed else 0)
    return scale, zp

def q_dq(src, key, signed=False):
    scale, zp = qparams(key, signed)
    zt = np.int8(zp) if signed else np.uint8(zp)
    s, z = const(key + "_scale", scale), const(key + "_zp", zt)
    nodes.append(helper.make_node("QuantizeLinear", [src, s, z], [key + "_q"], name=key + "_Q"))
    nodes.append(helper.make_node("DequantizeLinear", [key + "_q", s, z], [key + "_dq"], name=key + "_DQ"))
    return key + "_dq", scale

def dq_weights(name, w):
    w = w.detach().numpy().astype(np.float32)
    amax = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.round(w / scale.reshape(-1, *([1] * (w.ndim - 1)))), -127, 127).astype(np.int8)
    nodes.append(helper.make_node("DequantizeLinear", [const(name + "_i8", q), const(name + "_scale", scale),
                                  const(name + "_zp", np.zeros(len(scale), np.int8))], [name + "_dq"],
                                  name=name + "_DQ", axis=0))
    return name + "_dq", scale

def dq_bias(name, b, s_x, s_w):
    s = (np.float32(s_x) * s_w).astype(np.float32)
    q = np.round(b.detach().numpy() / s).astype(np.int32)
    nodes.append(helper.make_node("DequantizeLinear", [const(name + "_i32", q), const(name + "_scale", s)],
                                  [name + "_dq"], name=name + "_DQ", axis=0))
    return name + "_dq"

def conv(name, x, s_x, **attrs):
    m = net[name]
    w, s_w = dq_weights(name + "_w", m.weight)
    b = dq_bias(name + "_b", m.bias, s_x, s_w)
    nodes.append(helper.make_node("Conv", [x, w, b], [name + "_out"], name=name, pads=list(m.padding) * 2,
                                  kernel_shape=list(m.kernel_size), group=m.groups))
    return name + "_out"

x, sx = q_dq("input", "x")
c1 = conv("conv1", x, sx)
nodes.append(helper.make_node("Relu", [c1], ["r1"], name="relu1"))
a1, s1 = q_dq("r1", "a1")
c2 = conv("conv2", a1, s1)
nodes.append(helper.make_node("Relu", [c2], ["r2"], name="relu2"))
a2, s2 = q_dq("r2", "a2", signed=True)  # an i8 activation, as some exporters choose
c3 = conv("conv3", a2, s2)
a3, s3 = q_dq(c3, "a3")
nodes.append(helper.make_node("MaxPool", [a3], ["mp"], name="pool", kernel_shape=[2, 2], strides=[2, 2]))
a4, _ = q_dq("mp", "a4")
nodes.append(helper.make_node("GlobalAveragePool", [a4], ["gap"], name="gap"))
nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"))
g, sg = q_dq("flat", "g")
wf, swf = dq_weights("fc_w", net["fc"].weight)
bf = dq_bias("fc_b", net["fc"].bias, sg, swf)
nodes.append(helper.make_node("Gemm", [g, wf, bf], ["fc_out"], name="fc", transB=1))
y, _ = q_dq("fc_out", "y")
nodes.append(helper.make_node("Identity", [y], ["logits"], name="out"))

graph = helper.make_graph(nodes, "qdq_handmade",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="handmade-qdq")
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, "handmade_qdq.onnx")
np.save("hm_in.npy", torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(99)).numpy())
EOF
node "$ORT_RUN" handmade_qdq.onnx --input hm_in.npy --output hm_ort.npy --warmup 0 --runs 0 >/dev/null
"$LOWBIT" run handmade_qdq.onnx --input hm_in.npy --output hm_lowbit.npy
cosine_check "ORT vs lowbit on a hand-built QDQ model" hm_ort.npy hm_lowbit.npy || fail=1

LOWBIT_VERBOSE=qdq "$LOWBIT" explain handmade_qdq.onnx > hm_explain.txt 2>&1
grep "lowbit qdq" hm_explain.txt || true
for conv in conv1 conv2 conv3; do
  chosen=$(grep -A1 "^'$conv' (QConv)" hm_explain.txt | sed -n 's/^  chosen *//p')
  echo "explain: $conv -> QConv on ${chosen:-<not a QConv>}"
  if [[ -z $chosen || $chosen == reference* ]]; then
    echo "FAIL: $conv is not a QConv on a SIMD kernel"; fail=1
  fi
done
fc=$(grep -A1 "^'fc' (QGemm)" hm_explain.txt | sed -n 's/^  chosen *//p')
echo "explain: fc -> QGemm on ${fc:-<not a QGemm>}"
[[ -n $fc ]] || { echo "FAIL: fc is not a QGemm"; fail=1; }

echo "== 3. sub-byte: lowbit's w4a8 and w4a4 resnet18 -> QDQ with INT4 weights (opset 21) -> ONNX Runtime"
# Debian's onnx predates INT4, so its checker cannot read these files; the graph is inspected as
# plain protobuf fields instead (data_type 22 = INT4) and ONNX Runtime is the judge.
for prec in w4a8 w4a4; do
  "$LOWBIT" quantize resnet18 --precision "$prec" -o "r18_$prec.lbm" --calib-samples 4 2>/dev/null
  "$LOWBIT" export-onnx "r18_$prec.lbm" -o "r18_$prec.onnx"
  "$PY" - "r18_$prec.onnx" <<'EOF'
import math
import sys
import onnx
m = onnx.load(sys.argv[1])
opset = max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
int4 = [t for t in m.graph.initializer if t.data_type == 22]
packed = all(len(t.raw_data) == (math.prod(t.dims) + 1) // 2 for t in int4)
print(f"{sys.argv[1]}: opset {opset}, {len(int4)} INT4 initializers, packed two per byte: {packed}")
sys.exit(0 if opset >= 21 and len(int4) >= 30 and packed else 1)
EOF
  node "$ORT_RUN" "r18_$prec.onnx" --input r18_in.npy --output "r18_${prec}_ort.npy" --warmup 0 --runs 0 >/dev/null
  "$LOWBIT" run "r18_$prec.lbm" --input r18_in.npy --output "r18_${prec}_lowbit.npy" >/dev/null
  cosine_check "ORT (INT4 QDQ export, $prec) vs lowbit (.lbm)" "r18_${prec}_ort.npy" "r18_${prec}_lowbit.npy" || fail=1
done
# ... and back in: the INT4 DequantizeLinear weights become QConv nodes with packed i4 weights.
"$LOWBIT" run r18_w4a8.onnx --input r18_in.npy --output r18_w4a8_reimported.npy >/dev/null
cosine_check "lowbit (INT4 QDQ file re-imported) vs lowbit (.lbm)" r18_w4a8_reimported.npy r18_w4a8_lowbit.npy || fail=1
"$LOWBIT" inspect r18_w4a8.onnx > r18_w4a8_inspect.txt
i4=$(grep -c "QConv.*i4" r18_w4a8_inspect.txt || true)
echo "re-imported w4a8: $i4 QConv nodes with i4 weights"
[[ $i4 -ge 15 ]] || { echo "FAIL: the INT4 weights were not imported as i4 QConv weights"; fail=1; }

echo "== 4. codes through data movement: ShuffleNetV2 (Split / Slice, Reshape-Transpose-Reshape, Concat) and"
echo "      SqueezeNet (Concat) stay int8 between their convs, and ONNX Runtime runs the export"
for m in shufflenet_v2_x1_0 squeezenet1_1; do
  "$PY" - "$m" <<'EOF'
import sys
import numpy as np
import torch
import torchvision
torch.manual_seed(0)
m = getattr(torchvision.models, sys.argv[1])(weights=None).eval()
torch.onnx.export(m, torch.randn(1, 3, 96, 96), sys.argv[1] + ".onnx", opset_version=17, input_names=["input"],
                  output_names=["output"])
np.save(sys.argv[1] + "_in.npy", np.random.default_rng(5).standard_normal((1, 3, 96, 96)).astype(np.float32))
EOF
  "$LOWBIT" quantize "$m.onnx" -o "$m.lbm" --calib-samples 4 >/dev/null
  "$LOWBIT" explain "$m.lbm" --json "$m.explain.json" >/dev/null
  # Every data-movement node reads and writes codes (no DQ -> op -> Q around it), and the only
  # Dequantize is the one before the classifier's global mean (ShuffleNet) or the output.
  "$PY" - "$m.explain.json" <<'EOF' || fail=1
import collections, json, sys
nodes = json.load(open(sys.argv[1]))["nodes"]
ops = collections.Counter(n["op"] for n in nodes)
print(f"{sys.argv[1]}: {dict(ops)}")
moves = [n for n in nodes if n["op"] in ("Concat", "Transpose", "Slice", "Split", "Reshape")]
f32 = [n["node"] + " " + n["signature"] for n in moves if not n["signature"].split("->")[0].startswith("u8")]
if not moves or f32 or ops["DequantizeLinear"] > 1:
    sys.exit(f"FAIL: data movement in fp32: {f32[:5]}; {ops['DequantizeLinear']} DequantizeLinear")
EOF
  "$LOWBIT" export-onnx "$m.lbm" -o "${m}_qdq.onnx"
  node "$ORT_RUN" "${m}_qdq.onnx" --input "${m}_in.npy" --output "${m}_ort.npy" --warmup 0 --runs 0 >/dev/null
  "$LOWBIT" run "$m.lbm" --input "${m}_in.npy" --output "${m}_lowbit.npy" >/dev/null
  cosine_check "$m: ORT (QDQ export) vs lowbit (.lbm)" "${m}_ort.npy" "${m}_lowbit.npy" || fail=1
done

if [[ $fail -ne 0 ]]; then
  echo "test_qdq_ort: FAILED"
  exit 1
fi
echo "test_qdq_ort: OK"
