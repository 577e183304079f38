#pragma once
// What the runtime executes: one Kernel instance per node, created at compile time by the
// dispatcher (weights packed then, never per inference).
#include <span>

#include "lowbit/ir/tensor.h"
#include "lowbit/runtime/thread_pool.h"

namespace lowbit {

class Kernel {
 public:
  virtual ~Kernel() = default;
  // inputs/outputs follow the node's input/output order (an omitted optional input has data
  // == nullptr). Output buffers are preallocated by the memory plan.
  virtual void run(std::span<const TensorView> inputs, std::span<const TensorView> outputs, ThreadPool& pool) = 0;
  // Bytes of packed weights this kernel owns (reported by inspect/bench).
  virtual int64_t packed_weight_bytes() const { return 0; }
};

}  // namespace lowbit
