#!/usr/bin/env bash
# lowbit for AArch64: cross-compiles the `aarch64` preset (g++-aarch64-linux-gnu, no ONNX frontend)
# and runs the unit tests of the kernels, the quantizer and the guard under qemu-aarch64: once with
# `-cpu max` (NEON + dot product + i8mm: the sdot kernels are chosen) and once capped with
# LOWBIT_ISA=neon (the smlal kernels are chosen and the dotprod tests skip). The slow end-to-end
# scripts (PyTorch oracles) are native-only.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in aarch64-linux-gnu-g++ qemu-aarch64; do
  command -v "$tool" >/dev/null || { echo "$tool missing: run scripts/install-deps.sh" >&2; exit 1; }
done
jobs=$(nproc)
start=$SECONDS
cmake --preset aarch64 >/dev/null
cmake --build --preset aarch64 -j "$jobs"
built=$SECONDS
# Every unit test: kernels against the reference, dispatch and instruction checks, schemas, the
# quantizer, the guard and artifacts on the zoo's ResNet-18, except the slowest under emulation,
# which x86 runs: autotuning and artifact determinism repeat the same int8 pipeline; the sub-byte
# compile-everything and native-vs-logical tests quantize three models at twelve precisions (and
# --on-slow=allow's packed-weight ResNet-18, 69 s emulated, and --group-size's, 90 s: SubbyteKernels
# runs every NEON row, group-wise ones included; --prepack's ResNet-18 compiled and run five times:
# the layout key and the in-place read are the same code on every arch);
# Explain's every-target sweep (116 s emulated) is the same code on every architecture; the w1a1
# ResNet-18 (147 s emulated) repeats end to end what BinaryConvKernels / BinaryKernels check bit
# for bit on every NEON binary row. The suite had reached 42 of CI's 40 minutes.
ctest --preset aarch64 -j "$jobs" -E '^(Autotune\.|Quantize\.SameInputsGiveTheSameArtifact|Subbyte\.(EveryPrecision|NativeAndLogical|OnSlowAllow|GroupSize|Prepacked)|Explain\.EveryRejectionOnEveryNamedTarget|Binary\.Resnet18W1a1)'
# The same kernels forced onto plain NEON (the emulator still has dotprod; the cap hides it).
LOWBIT_ISA=neon ctest --preset aarch64 -j "$jobs" -R '^(Neon|F32Kernels|Qu8|Quantize\.Resnet18)'
echo "aarch64: build $((built - start)) s, tests $((SECONDS - built)) s"
