#!/usr/bin/env bash
# `lowbit report` in a real browser: a small report (ResNet-18, three widths, one thread, no
# AArch64 rows) rendered by headless Chromium (Debian's chromium). Checks that the page loads
# without errors, that every plot came out with its marks (bars, samples, layers, points and
# ceilings) after Chromium parsed it, and that report.md, report.json and the plot files are there.
# Usage: test_report_html.sh <lowbit-binary> <work-dir>
set -euo pipefail
LOWBIT=${1:?usage: $0 <lowbit-binary> <work-dir>}
WORK=${2:?usage: $0 <lowbit-binary> <work-dir>}/report_html
PY=/usr/bin/python3
fail() {
  echo "FAIL test_report_html: $*"
  exit 1
}
command -v chromium >/dev/null || fail "chromium is not installed (scripts/install-deps.sh installs it)"
rm -rf "$WORK"
mkdir -p "$WORK"
"$LOWBIT" report resnet18 --quick --no-aarch64 --precisions fp32,int8,w4a4 --threads 1 -o "$WORK/out" >"$WORK/report.log" 2>&1 ||
  { cat "$WORK/report.log"; fail "lowbit report failed"; }
cat "$WORK/report.log"
for f in index.html report.md report.json plots/latency.svg plots/distribution.svg plots/layers.svg plots/roofline.svg \
  plots/size_accuracy.svg; do
  [[ -s $WORK/out/$f ]] || fail "the report has no $f"
done
# As the machine's probe starts it (no sandbox as root, no background networking: the network is closed).
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$WORK/profile" --enable-logging=stderr --v=0 \
  --dump-dom "file://$WORK/out/index.html" >"$WORK/dom.html" 2>"$WORK/chromium.log" || {
  tail -20 "$WORK/chromium.log"
  fail "chromium could not render the page"
}
# Console messages and page errors are logged as CONSOLE(...) / Uncaught lines; the page has no scripts.
if grep -E "CONSOLE\(|Uncaught|Failed to load resource|ERR_FILE_NOT_FOUND" "$WORK/chromium.log"; then
  fail "the page logged errors in Chromium"
fi
$PY - "$WORK/dom.html" "$WORK/out/report.json" <<'PYEOF' || fail "a plot or section is missing or empty"
import json, sys
from html.parser import HTMLParser

class Plots(HTMLParser):
    def __init__(self):
        super().__init__()
        self.plots, self.cur, self.titles, self.sections = [], None, [], []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "plot" in a.get("class", ""):
            self.cur = {"marks": {}, "title": ""}
            self.plots.append(self.cur)
        elif self.cur is not None and tag in ("rect", "circle", "path"):
            cls = a.get("class", "")
            if cls:
                self.cur["marks"][cls] = self.cur["marks"].get(cls, 0) + 1
        if tag == "h2":
            self.sections.append(a.get("id"))
    def handle_endtag(self, tag):
        if tag == "svg":
            self.cur = None

p = Plots()
p.feed(open(sys.argv[1], encoding="utf-8").read())
report = json.load(open(sys.argv[2]))
need = {  # marks each plot must have, in page order
    "latency": {"bar": 3},
    "distribution": {"sample": 3 * 10},
    "size_accuracy": {"point": 3},
    "layers": {"bar": 4},
    "roofline": {"point": 20, "ceiling": 2},
}
assert len(p.plots) == len(need), f"{len(p.plots)} plots in the page, expected {len(need)}"
for (name, marks), plot in zip(need.items(), p.plots):
    for cls, n in marks.items():
        got = plot["marks"].get(cls, 0)
        assert got >= n, f"plot {name}: {got} {cls} marks, expected at least {n}"
    print(f"plot {name}: {plot['marks']}")
for s in ("study", "latency", "accuracy", "builds", "layers", "microbench", "dispatch", "kernels"):
    assert s in p.sections, f"no section {s}"
assert report["runs"] and report["study"]["x86_int8_ms"] == 379.9
print(f"{len(p.plots)} plots with content, {len(p.sections)} sections, {len(report['runs'])} timed runs")
PYEOF
echo "PASS test_report_html"
