#pragma once
// x86 intrinsics for lowbit's ISA-specific sources. With LOWBIT_USE_SIMDE defined the same source
// compiles against SIMDe's portable implementations instead, so that kernels for instructions the
// build machine lacks (AVX-512 VNNI, AVX-VNNI) can still be built and tested against the
// reference (tests/simde). Such a build must put its symbols in another namespace (see
// LOWBIT_KERNEL_NS in kernels/qu8-gemm/qu8_gemm.h) so that it can link next to the real ones.
#ifdef LOWBIT_USE_SIMDE
#ifndef SIMDE_ENABLE_NATIVE_ALIASES
#define SIMDE_ENABLE_NATIVE_ALIASES
#endif
#include <simde/x86/avx2.h>
#include <simde/x86/avx512.h>
#include <simde/x86/fma.h>
#else
#include <immintrin.h>
#endif
