#!/usr/bin/env bash
# The concurrency test (tests/concurrency_test.cc: 4 callers x 50 runs on one compiled model, fp32,
# int8, w4a8 and binary models) under ThreadSanitizer, built with Debian's clang-14. Any report
# fails the run (halt_on_error). The ONNX frontend is left out: the test does not use it, and
# Debian's protobuf is not instrumented.
set -euo pipefail
cd "$(dirname "$0")/.."
CXX_TSAN=${CXX_TSAN:-clang++-14}
command -v "$CXX_TSAN" >/dev/null || bash scripts/install-deps.sh clang-14
build=build/tsan
# -O1 -g1: line tables are all a report needs; RelWithDebInfo's -O2 -g took 35% longer to compile
# (qu8-gemm/avx512vnni.cc 19.8 s -> 12.3 s, artifact.cc 11.5 s -> 7.2 s).
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$CXX_TSAN" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DLOWBIT_TSAN=ON -DLOWBIT_WITH_ONNX=OFF >/dev/null
cmake --build "$build" --target lowbit_concurrency_tests
TSAN_OPTIONS="halt_on_error=1 abort_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
  "$build/tests/lowbit_concurrency_tests" "$@"
echo "ThreadSanitizer: no reports"
