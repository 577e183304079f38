#pragma once
// qu8-lut: y[i] = table[x[i]] over u8 codes, the kernel of QLut (an element-wise map, with any
// scale and shift after it, quantized as a 256-entry table by quant/quantize.cc). Exact: every
// row gives the reference's bytes.
#include <cstddef>
#include <cstdint>

namespace lowbit {

using Qu8LutFn = void (*)(size_t n, const uint8_t* x, uint8_t* y, const uint8_t* table);

void qu8_lut__scalar(size_t n, const uint8_t* x, uint8_t* y, const uint8_t* table);
void qu8_lut__avx2(size_t n, const uint8_t* x, uint8_t* y, const uint8_t* table);        // x86-64 builds
void qu8_lut__avx512vbmi(size_t n, const uint8_t* x, uint8_t* y, const uint8_t* table);  // x86-64 builds
void qu8_lut__neon(size_t n, const uint8_t* x, uint8_t* y, const uint8_t* table);        // AArch64 builds

}  // namespace lowbit
