#!/usr/bin/env bash
# The main job: install, build (release), then benchmark and explain the built-in ResNet-50.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
./build/release/lowbit bench resnet50 --warmup 10 --runs 100
./build/release/lowbit explain resnet50
