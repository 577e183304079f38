#pragma once
// Integer dot products for fully connected layers (QGemm): memory bound on the i8 weights, so
// the weights stay i8 and are widened in registers.
#include <cstddef>
#include <cstdint>

namespace lowbit {

// acc[j] = sum_{k < kp} a[k] * w[j * ldw + k] for j < n. a: int16 (x - zp_x), kp a multiple of 16
// and zero past K; w: i8 rows, zero padded to kp.
using Qu8GemvAcc = void (*)(size_t kp, const int16_t* a, const int8_t* w, size_t ldw, size_t n, int32_t* acc);
void qu8_gemv_acc__avx2(size_t kp, const int16_t* a, const int8_t* w, size_t ldw, size_t n, int32_t* acc);
void qu8_gemv_acc__neon(size_t kp, const int16_t* a, const int8_t* w, size_t ldw, size_t n, int32_t* acc);

}  // namespace lowbit
