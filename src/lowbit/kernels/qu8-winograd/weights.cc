// The integer F(2x2, 3x3) weight transform: baseline code, run once per conv at creation.
#include "lowbit/kernels/qu8-winograd/qu8_winograd.h"

namespace lowbit {

void qu8_winograd_weights_2x2_3x3(const int8_t* w, int16_t* u) {
  static constexpr int32_t G[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};
  int32_t gw[4][3];
  for (int i = 0; i < 4; ++i)
    for (int b = 0; b < 3; ++b) {
      int32_t acc = 0;
      for (int a = 0; a < 3; ++a) acc += G[i][a] * w[a * 3 + b];
      gw[i][b] = acc;
    }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      int32_t acc = 0;
      for (int b = 0; b < 3; ++b) acc += gw[i][b] * G[j][b];
      u[4 * i + j] = static_cast<int16_t>(acc);  // |acc| <= 9 * 128
    }
}

}  // namespace lowbit
