#!/usr/bin/env bash
# Runs the AArch64 build of lowbit under user-mode QEMU from an x86-64 machine, as the study ran
# its cross-compiled model:
#   bash scripts/run-aarch64.sh lowbit bench m.lbm --threads 1        # -cpu cortex-a72 (NEON only)
#   QEMU_CPU=max bash scripts/run-aarch64.sh lowbit run m.lbm ...      # every extension QEMU has
#   bash scripts/run-aarch64.sh --cpu neoverse-n1 lowbit explain resnet18 --precision int8
# The first word names the program: `lowbit` (the CLI) or `lowbit_tests`. An artifact quantized on
# x86-64 with `--target cortex-a72` (or neoverse-n1, armv8.6-a) runs here as it is. When the AArch64
# build is missing it is made first (scripts/aarch64-sysroot.sh for the ONNX frontend's arm64
# libraries, then the `aarch64` preset).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cpu=${QEMU_CPU:-cortex-a72}
if [[ ${1:-} == --cpu ]]; then
  cpu=${2:?--cpu needs a CPU name (cortex-a72, neoverse-n1, max)}
  shift 2
fi
prog=${1:?usage: $0 [--cpu CPU] lowbit|lowbit_tests ARGS...}
shift
case $prog in
  lowbit) bin=$root/build/aarch64/lowbit target=lowbit_cli ;;
  lowbit_tests) bin=$root/build/aarch64/tests/lowbit_tests target=lowbit_tests ;;
  *) echo "$0: unknown program '$prog' (lowbit or lowbit_tests)" >&2; exit 2 ;;
esac
for tool in qemu-aarch64 aarch64-linux-gnu-g++; do
  command -v "$tool" >/dev/null || { echo "$tool missing: run scripts/install-deps.sh" >&2; exit 1; }
done
if [[ ! -x $bin ]]; then
  echo "building the AArch64 $prog (once)" >&2
  bash "$root/scripts/aarch64-sysroot.sh" >&2
  (cd "$root" && cmake --preset aarch64 >/dev/null && cmake --build --preset aarch64 --target "$target" >&2)
fi
# -L: the AArch64 C and C++ runtime (ld-linux-aarch64.so.1 and libstdc++) of the cross toolchain;
# the ONNX and protobuf libraries are found through the binary's RPATH into build/aarch64-sysroot.
exec qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu "$cpu" "$bin" "$@"
