#!/usr/bin/env bash
# Fuzzes lowbit's readers with libFuzzer (tests/fuzz/fuzz_targets.h): ONNX models, .lbm artifacts,
# .npy files and images, each through the real path behind the reader, under ASan + UBSan.
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET=60] [TARGET...]     (targets: onnx artifact npy image)
# Builds with Debian's clang-14 and starts from the seeds in tests/fuzz/corpus/<target> (read only),
# keeping what it discovers in BUILD/corpus/<target>. Two targets run at a time.
#   LOWBIT_FUZZ_COVERAGE=all (default, build/fuzz): every file under ASan + UBSan and libFuzzer's
#     coverage; for campaigns.
#   LOWBIT_FUZZ_COVERAGE=readers (build/fuzz-readers): the fuzz targets only, without the quantizer,
#     reports and C API they never reach; coverage on everything but kernels/, and the SIMD kernel
#     files without ASan (the sanitized suite checks their bounds row by row). 164 s to build on 2
#     cores (Zen 5) instead of 7 minutes. The test command's 45-second runs use it.
# A crash, sanitizer report, leak, timeout (20 s) or memory blow-up (3 GB) fails the run and leaves
# the input in build/fuzz/findings/<target>/; copied into tests/fuzz/findings/<target>/ it becomes a
# regression test (tests/fuzz_replay_test.cc replays both folders in every test run).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(onnx artifact npy image)
CXX_FUZZ=${CXX_FUZZ:-clang++-14}
command -v "$CXX_FUZZ" >/dev/null || bash scripts/install-deps.sh clang-14
coverage=${LOWBIT_FUZZ_COVERAGE:-all}
case $coverage in
  all) build=build/fuzz ;;
  readers) build=build/fuzz-readers ;;
  *) echo "LOWBIT_FUZZ_COVERAGE is '$coverage': use all or readers" >&2; exit 2 ;;
esac
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$CXX_FUZZ" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DLOWBIT_FUZZ=ON -DLOWBIT_FUZZ_COVERAGE="$coverage" \
  -DLOWBIT_BUILD_TESTS=OFF -DLOWBIT_SHARED=OFF -DLOWBIT_PYTHON=OFF >/dev/null
cmake --build "$build" --target $(printf 'fuzz_%s ' "${targets[@]}")
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
run_one() {
  local t=$1
  mkdir -p "$build/corpus/$t" "$build/findings/$t"
  # CPU seconds (user + system) go to fuzz_<target>.cpu: a campaign's length is counted in them.
  local TIMEFORMAT='%U %S'
  { time "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 \
      -artifact_prefix="$build/findings/$t/" "$build/corpus/$t" "tests/fuzz/corpus/$t" >"$build/fuzz_$t.log" 2>&1; } \
    2>"$build/fuzz_$t.cpu"
}
status=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=("$!:$t")
  if [ ${#pids[@]} -ge 2 ]; then
    p=${pids[0]}; pids=("${pids[@]:1}")
    wait "${p%%:*}" || { status=1; echo "fuzz_${p#*:}: FAILED (see $build/fuzz_${p#*:}.log)"; }
  fi
done
for p in "${pids[@]}"; do
  wait "${p%%:*}" || { status=1; echo "fuzz_${p#*:}: FAILED (see $build/fuzz_${p#*:}.log)"; }
done
for t in "${targets[@]}"; do
  stats=$(grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/fuzz_$t.log" | awk '{print $1, $2}' | tr '\n' ' ')
  cov=$(grep -oE "cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*" "$build/fuzz_$t.log" | tail -1)
  cpu=$(awk '{printf "%.0f", $1 + $2}' "$build/fuzz_$t.cpu" 2>/dev/null)
  echo "fuzz_$t: ${secs}s wall, ${cpu:-?} CPU-s  $cov  $stats"
  grep -E "ERROR: |SUMMARY: |runtime error" "$build/fuzz_$t.log" | head -5 || true
done
exit $status
