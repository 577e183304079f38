#!/usr/bin/env bash
# The install package, as a user consumes it: `cmake --install` of this build into a fresh prefix,
# then examples/c (a C99 program) configured with find_package(lowbit) against that prefix alone,
# built and run: an fp32 and an int8 ResNet-18 through the C API, and a model lowbit refuses. The
# installed CLI runs from the prefix too, and the shared library exports the C API and nothing else.
# Usage: test_install_package.sh LOWBIT_BINARY WORK_DIR
set -euo pipefail
LOWBIT=$(realpath "$1")
BUILD=$(dirname "$LOWBIT")
WORK=$2/install_package
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

cmake --install "$BUILD" --prefix "$WORK/prefix" >install.log
for f in bin/lowbit include/lowbit/lowbit.h lib/cmake/lowbit/lowbitConfig.cmake lib/cmake/lowbit/lowbitConfigVersion.cmake; do
  [ -e "prefix/$f" ] || { echo "FAIL: the install lacks $f"; cat install.log; exit 1; }
done
lib=$(ls prefix/lib*/liblowbit.so* | head -1)
[ -n "$lib" ] || { echo "FAIL: no liblowbit.so installed"; exit 1; }

# Only lowbit_* C functions are exported (the C++ internals stay private to the library).
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWiDdBbRrVv]$/ {print $3}' | grep -v '^_\(init\|fini\)$' || true)
others=$(echo "$exported" | grep -v '^lowbit_' | grep -v '^$' || true)
[ -z "$others" ] || { echo "FAIL: liblowbit.so exports more than the C API:"; echo "$others" | head; exit 1; }
n=$(echo "$exported" | grep -c '^lowbit_')
[ "$n" -ge 20 ] || { echo "FAIL: only $n lowbit_* symbols exported"; exit 1; }

# The example against the installed tree only: CMAKE_PREFIX_PATH names the prefix, and neither the
# source tree's include/ nor the build tree is on any path.
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$ROOT/examples/c" -B example "${gen[@]}" -DCMAKE_PREFIX_PATH="$WORK/prefix" -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >configure.log ||
  { cat configure.log; exit 1; }
cmake --build example >build.log 2>&1 || { cat build.log; exit 1; }
! grep -q "$ROOT/include\|$ROOT/src" example/compile_commands.json || { echo "FAIL: the example saw the source tree"; exit 1; }

./example/classify resnet18 input_shape=input=1x3x64x64 threads=1 >fp32.txt
cat fp32.txt
grep -q "^top 5: " fp32.txt
grep -q "^short input buffer: code 2: input 'input' needs 49152 bytes, the buffer has 49148" fp32.txt
grep -q "^first node's kernel: f32-" fp32.txt

./example/classify resnet18 precision=int8 calibration_samples=2 input_shape=input=1x3x64x64 threads=1 >int8.txt
cat int8.txt
grep -q "^top 5: " int8.txt
# The fp32 and int8 models agree on the best class of this input.
[ "$(sed -n 's/^top 5: \([0-9]*\) .*/\1/p' fp32.txt)" = "$(sed -n 's/^top 5: \([0-9]*\) .*/\1/p' int8.txt)" ] ||
  { echo "FAIL: fp32 and int8 disagree on the top class"; exit 1; }

# Refusals are statuses with lowbit's message, not crashes.
printf 'not an onnx model' >bad.onnx
if ./example/classify bad.onnx 2>bad.txt; then echo "FAIL: a malformed model was accepted"; exit 1; fi
cat bad.txt
grep -q "classify: bad.onnx: .*(code 1)" bad.txt
if ./example/classify resnet18 precison=int8 2>typo.txt; then echo "FAIL: an unknown option was accepted"; exit 1; fi
grep -q "unknown option 'precison'" typo.txt

# The installed CLI runs from the prefix.
"$WORK/prefix/bin/lowbit" targets >targets.txt
grep -q "^host: " targets.txt
echo "PASS: installed package: C API example built with find_package(lowbit), fp32 and int8 run, refusals reported"
