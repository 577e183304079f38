#include "lowbit/kernels/qu8-lut/qu8_lut.h"

namespace lowbit {

// About a byte a cycle: a load, a dependent table load and a store per element.
void qu8_lut__scalar(size_t n, const uint8_t* x, uint8_t* y, const uint8_t* table) {
  for (size_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

}  // namespace lowbit
