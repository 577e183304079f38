// libFuzzer entry point for one target of fuzz_targets.h, chosen at compile time
// (-DLOWBIT_FUZZ_TARGET=onnx_model): one executable per target, as scripts/fuzz.sh builds them.
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)lowbit::fuzz::LOWBIT_FUZZ_TARGET(data, size);
  return 0;
}
