#pragma once
// What the runtime executes: one Kernel instance per node, created at compile time by the
// dispatcher (weights packed then, never per inference).
#include <span>
#include <string>

#include "lowbit/ir/tensor.h"
#include "lowbit/runtime/thread_pool.h"

namespace lowbit {

class Kernel {
 public:
  virtual ~Kernel() = default;
  // inputs/outputs follow the node's input/output order (an omitted optional input has data
  // == nullptr). Output buffers are preallocated by the memory plan.
  virtual void run(std::span<const TensorView> inputs, std::span<const TensorView> outputs, ThreadPool& pool) const = 0;
  // Bytes of packed weights this kernel owns (reported by inspect/bench).
  virtual int64_t packed_weight_bytes() const { return 0; }
  // The weights in this kernel's own layout, for artifacts that carry it (`quantize --prepack`):
  // `key` names the layout (kernel set, tile, shapes, a hash of the weights) and `blob` holds it.
  // Stored on the node (kPrepackedAttr / kPrepackedKeyAttr), it lets a later compile whose kernel
  // computes the same key read the weights in place, from the artifact's mapping, instead of
  // packing them again. False when the kernel keeps no such layout.
  virtual bool prepacked(std::string& key, Tensor& blob) const { return false; }
  // True when this kernel read its weights from such a stored layout.
  virtual bool uses_prepacked() const { return false; }
};

inline constexpr const char* kPrepackedAttr = "prepacked";
inline constexpr const char* kPrepackedKeyAttr = "prepacked_key";

}  // namespace lowbit
