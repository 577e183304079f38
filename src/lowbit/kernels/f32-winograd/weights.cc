// The F(2x2, 3x3) weight transform: baseline code, run once per conv at creation.
#include "lowbit/kernels/f32-winograd/f32_winograd.h"

namespace lowbit {

void f32_winograd_weights_2x2_3x3(const float* g, float* u) {
  // G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]; in double so U carries no extra rounding.
  static constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  double gt[4][3];  // G g
  for (int i = 0; i < 4; ++i)
    for (int b = 0; b < 3; ++b) {
      double acc = 0;
      for (int a = 0; a < 3; ++a) acc += G[i][a] * g[a * 3 + b];
      gt[i][b] = acc;
    }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int b = 0; b < 3; ++b) acc += gt[i][b] * G[j][b];
      u[4 * i + j] = static_cast<float>(acc);
    }
}

}  // namespace lowbit
