#pragma once
// A small fork-join pool. parallel_for gives thread i the i-th contiguous share of the task
// indices and lets a thread that finishes its share take the back half of what is left of the
// others' (the caller thread works too). The shares keep data where it was written: kernels
// number their tasks in image order, so a thread's part of one layer's output is mostly its part
// of the next layer's input. With plain dynamic scheduling about half of every layer's input came
// from the other core's cache, which on this VM (a 350 ns cache-line round trip between its two
// vCPUs at times) made 2-thread ResNet-50 1.3x slower while two 1-thread processes ran at full
// speed. Kernels parallelise inside an operator; operators run one after another, so workers spin
// briefly between jobs before sleeping: a ResNet-50 inference forks ~100 times and a
// condition-variable wake-up per fork costs more than a short spin.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace lowbit {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads <= 0: all cores
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(task, thread_index) for task in [0, tasks); thread_index in [0, size()).
  void parallel_for(int64_t tasks, const std::function<void(int64_t task, int thread)>& fn);

 private:
  void worker_loop(int index);
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  const std::function<void(int64_t, int)>* job_ = nullptr;
  // One share per thread, each on its own cache line: the task range [next, end) still unclaimed,
  // packed into one word (next in the low half) so that the owner, taking from the front, and a
  // thief, taking the back half, claim with one compare-exchange each.
  struct alignas(64) Share {
    std::atomic<uint64_t> range{0};
  };
  std::unique_ptr<Share[]> shares_;
  void run_shares(const std::function<void(int64_t, int)>& fn, int index);
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  // Workers blocked on cv_start_, and whether the caller is blocked on cv_done_: a notification is
  // sent only to a side that is waiting (thread_pool.cc).
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_blocked_{false};
};

}  // namespace lowbit
