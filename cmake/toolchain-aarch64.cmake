# Cross-compiling lowbit for AArch64 Linux on an x86-64 Debian host (g++-aarch64-linux-gnu), with
# tests run under user-mode QEMU. `-cpu max` emulates every extension QEMU knows (dotprod, i8mm);
# scripts/test-aarch64.sh also runs the kernels capped with LOWBIT_ISA=neon.
# The ONNX frontend links Debian's arm64 ONNX and protobuf, unpacked by scripts/aarch64-sysroot.sh
# into build/aarch64-sysroot (a second find root beside the cross toolchain's own); protoc is the
# build machine's, of the same version.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
get_filename_component(LOWBIT_AARCH64_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../build/aarch64-sysroot" ABSOLUTE)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu ${LOWBIT_AARCH64_SYSROOT})
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The arm64 libraries' own dependencies (libonnx needs libprotobuf, which needs zlib from /lib)
# resolve from the sysroot at link time, and at run time through the binaries' RPATH: DT_RPATH, not
# RUNPATH, because only the former also serves the libraries' own dependencies (libz.so.1 is in no
# directory that qemu-aarch64 -L /usr/aarch64-linux-gnu searches).
set(LOWBIT_AARCH64_LIBDIRS ${LOWBIT_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu ${LOWBIT_AARCH64_SYSROOT}/lib/aarch64-linux-gnu)
set(CMAKE_BUILD_RPATH ${LOWBIT_AARCH64_LIBDIRS})
list(JOIN LOWBIT_AARCH64_LIBDIRS ":" _lowbit_libdirs)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,--disable-new-dtags -Wl,-rpath-link,${_lowbit_libdirs}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,--disable-new-dtags -Wl,-rpath-link,${_lowbit_libdirs}")
set(CMAKE_CROSSCOMPILING_EMULATOR "qemu-aarch64;-L;/usr/aarch64-linux-gnu;-cpu;max")
