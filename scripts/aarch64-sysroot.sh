#!/usr/bin/env bash
# The AArch64 build's ONNX frontend needs Debian's arm64 ONNX and protobuf libraries. They are
# downloaded (Debian multiarch: the arm64 package lists) and unpacked into build/aarch64-sysroot,
# not installed: libonnxifi:arm64, which libonnx-dev:arm64 depends on, cannot be co-installed with
# the amd64 one (both own /usr/lib/libonnxifi.so). cmake/toolchain-aarch64.cmake finds them there;
# at run time qemu-aarch64 reads them through the binaries' RPATH. Idempotent.
#   bash scripts/aarch64-sysroot.sh [SYSROOT]
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:-build/aarch64-sysroot}
stamp=$root/.complete
[[ -f $stamp ]] && exit 0
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "adding the arm64 architecture to apt (Debian multiarch) for the AArch64 ONNX frontend"
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
elif ! apt-cache show libonnx-dev:arm64 >/dev/null 2>&1; then
  $SUDO apt-get update -qq
fi
pkgs=(libonnx-dev:arm64 libonnx1:arm64 libonnxifi:arm64 libprotobuf-dev:arm64 libprotobuf32:arm64 libprotobuf-lite32:arm64
      zlib1g:arm64)
mkdir -p "$root/debs"
# apt-get download runs as the _apt user where it can: give it the folder.
chmod 777 "$root/debs"
(cd "$root/debs" && apt-get download -qq "${pkgs[@]}")
for deb in "$root"/debs/*.deb; do dpkg-deb -x "$deb" "$root"; done
touch "$stamp"
echo "arm64 ONNX and protobuf unpacked into $root"
