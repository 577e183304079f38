#!/usr/bin/env bash
# Installs what lowbit needs on Debian 12 (idempotent; skips apt when everything is present).
# Extra Debian packages may be named as arguments: scripts/fuzz.sh and scripts/test-tsan.sh ask for
# clang-14 (libFuzzer, ThreadSanitizer) when they first run; quickstart.sh never needs it (LLVM 14
# is 484 MB installed).
set -euo pipefail
pkgs=(g++ cmake ninja-build pkg-config libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
      libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libsimde-dev
      python3-numpy python3-torch python3-torchvision python3-onnx binutils nodejs npm libstb-dev imagemagick chromium
      fonts-dejavu-core g++-aarch64-linux-gnu binutils-aarch64-linux-gnu qemu-user
      pybind11-dev python3-dev python3-pytest python3-pip python3-setuptools
      "$@")
missing=()
for p in "${pkgs[@]}"; do
  # NodeSource's nodejs bundles npm and conflicts with Debian's npm package.
  [[ $p == npm ]] && command -v npm >/dev/null && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime (npm; its CPU library ships inside the package) for the QDQ interop test and the
# benchmarks. ONNXRUNTIME_NODE_INSTALL=skip stops its install script from fetching GPU files.
cd "$(dirname "$0")/../bench"
if [[ ! -d node_modules/onnxruntime-node ]]; then
  echo "installing onnxruntime-node into bench/node_modules"
  ONNXRUNTIME_NODE_INSTALL=skip npm install --no-save --no-package-lock --no-audit --no-fund \
    "onnxruntime-node@${ORT_VERSION:-1.30.0}"
fi
