#pragma once
// Quantize-time loops (GPTQ's linear algebra, the reader-error sums of --calibration auto and
// --equalize) are compiled for AVX-512, AVX2 and baseline x86-64 by GCC/clang function
// multi-versioning, one version picked per CPU at load time by an ifunc resolver. Runtime kernels
// do not use this: they are chosen by the dispatch table, where `explain` can see them.
//
// Off under ThreadSanitizer: clang instruments the resolver, which the dynamic loader runs before
// the TSan runtime exists (__tsan_func_entry on a null thread state: scripts/test-tsan.sh crashed
// at load with clang-14). The baseline version computes the same floats in the same order (each
// such file is built with -ffp-contract=off), so nothing a TSan run checks changes.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LOWBIT_UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define LOWBIT_UNDER_TSAN 1
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(LOWBIT_UNDER_TSAN)
#define LOWBIT_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LOWBIT_MULTIVERSION
#endif
