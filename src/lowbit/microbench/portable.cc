// Baseline loops of the microbenchmark (loops.h): scalar multiply-adds, the clock and read
// bandwidth. The scalar chains must stay scalar: vectorising them would measure another path.
#include <cstdint>

#include "lowbit/microbench/loops.h"

// An empty asm that takes a value in its register and gives it back: the compiler can neither
// fuse the chains into vectors nor move work across it.
#if defined(__x86_64__)
#define LOWBIT_KEEP_F(v) asm volatile("" : "+x"(v))
#elif defined(__aarch64__)
#define LOWBIT_KEEP_F(v) asm volatile("" : "+w"(v))
#else
#define LOWBIT_KEEP_F(v) asm volatile("" : "+g"(v))
#endif

namespace lowbit::microbench {

__attribute__((optimize("no-tree-vectorize", "no-tree-slp-vectorize"))) float scalar_f32_loop(int64_t iters) {
  float a[8] = {1.0f, 1.1f, 1.2f, 1.3f, 1.4f, 1.5f, 1.6f, 1.7f};
  volatile float mv = 0.999999f, cv = 1e-7f;
  const float m = mv, c = cv;
  for (int64_t it = 0; it < iters; ++it)
    for (int j = 0; j < 8; ++j) {
      a[j] = a[j] * m + c;
      LOWBIT_KEEP_F(a[j]);  // one register each: no fusing into vectors
    }
  return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

__attribute__((optimize("no-tree-vectorize", "no-tree-slp-vectorize"))) int64_t scalar_i32_loop(int64_t iters) {
  int32_t a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  volatile int32_t mv = 3, cv = 1;
  const int32_t m = mv, c = cv;
  for (int64_t it = 0; it < iters; ++it)
    for (int j = 0; j < 8; ++j) {
      a[j] = static_cast<int32_t>(static_cast<uint32_t>(a[j]) * static_cast<uint32_t>(m) + static_cast<uint32_t>(c));
      asm volatile("" : "+r"(a[j]));
    }
  int64_t s = 0;
  for (int32_t x : a) s += x;
  return s;
}

// 16 dependent register-to-register adds per iteration: one cycle each. Not `add $1, reg`: Intel's
// Golden Cove cores (Alder Lake, Sapphire Rapids) fold chains of add-immediate in the renamer and
// ran this chain at 5 adds a cycle, so the clock read 15.9 GHz on a Sapphire Rapids Xeon and every
// path's fraction of its bound came out 5x too low.
int64_t add_chain_loop(int64_t iters) {
  int64_t x = 0;
  volatile int64_t one_v = 1;
  const int64_t one = one_v;
  for (int64_t it = 0; it < iters; ++it) {
#if defined(__x86_64__)
    asm volatile(
        "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
        "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
        : "+r"(x)
        : "r"(one)
        : "cc");
#elif defined(__aarch64__)
    asm volatile(
        "add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\t"
        "add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\t"
        "add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\t"
        "add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\t"
        : "+r"(x)
        : "r"(one));
#else
    for (int j = 0; j < 16; ++j) asm volatile("" : "+r"(x)), x += one;
#endif
  }
  return x;
}

uint64_t read_loop(const uint64_t* data, int64_t bytes, int64_t passes) {
  const int64_t n = bytes / 8;
  uint64_t acc[8] = {};
  for (int64_t p = 0; p < passes; ++p) {
    for (int64_t i = 0; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) acc[j] += data[i + j];
    asm volatile("" : : "r"(acc) : "memory");  // each pass reads the buffer again
  }
  uint64_t s = 0;
  for (uint64_t a : acc) s += a;
  return s;
}

}  // namespace lowbit::microbench
