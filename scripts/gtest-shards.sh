#!/usr/bin/env bash
# Runs a GoogleTest binary as SHARDS processes, JOBS at a time (GoogleTest's own sharding:
# GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX), instead of one process per test as ctest does:
#   bash scripts/gtest-shards.sh [-n SHARDS=8] [-j JOBS=nproc] [-f GTEST_FILTER] [-o LOG_DIR] -- COMMAND...
# For binaries that are slow to start: the ASan + UBSan lowbit_tests takes 0.33 s to reach main
# (shadow memory, the registries' static initialisers under instrumentation), so ctest's 644
# processes spent 212 of the sanitized stage's 410 CPU-seconds starting (315 s on 2 cores; 158 s
# as 8 shards). Each shard's output goes to LOG_DIR/shard_K.log; a failing shard's log is printed
# and the script exits 1. Each shard has 20 minutes (ctest gave each test 10).
set -uo pipefail
shards=8
jobs=$(nproc)
filter=${GTEST_FILTER:-*}
logs=$(mktemp -d)
while [ $# -gt 0 ]; do
  case $1 in
    -n) shards=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    -f) filter=$2; shift 2 ;;
    -o) logs=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "gtest-shards.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: gtest-shards.sh [-n SHARDS] [-j JOBS] [-f FILTER] [-o LOG_DIR] -- COMMAND..." >&2; exit 2; }
mkdir -p "$logs"
export GTEST_FILTER=$filter GTEST_TOTAL_SHARDS=$shards GTEST_BRIEF=1
start=$SECONDS
# xargs runs JOBS shards at a time and takes the next as one ends; its status is 123 when any
# command failed.
seq 0 $((shards - 1)) | xargs -P "$jobs" -I{} env GTEST_SHARD_INDEX={} bash -c \
  'timeout 1200 "$@" > "'"$logs"'/shard_$GTEST_SHARD_INDEX.log" 2>&1' _ "$@"
status=$?
failed=0
tests=0
for ((k = 0; k < shards; ++k)); do
  log=$logs/shard_$k.log
  n=$(grep -oE '^\[==========\] [0-9]+ tests?' "$log" | grep -oE '[0-9]+' | tail -1)
  tests=$((tests + ${n:-0}))
  if ! grep -q '^\[  PASSED  \]' "$log" || grep -q '^\[  FAILED  \]' "$log"; then
    failed=1
    echo "---- shard $k of $shards failed ($log):"
    cat "$log"
  fi
done
echo "gtest-shards: $tests tests in $shards shards, $((SECONDS - start)) s"
[ $status -eq 0 ] && [ $failed -eq 0 ]
