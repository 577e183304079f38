#!/usr/bin/env bash
# The main job: install, build (release), then benchmark the built-in ResNet-50 in fp32 and int8
# side by side and explain every kernel choice of the quantized plan.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
./build/release/lowbit bench resnet50 --precision fp32 --warmup 10 --runs 100
./build/release/lowbit bench resnet50 --precision int8 --warmup 10 --runs 100
./build/release/lowbit explain resnet50 --precision int8
