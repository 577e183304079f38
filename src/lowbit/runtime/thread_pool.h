#pragma once
// A small fork-join pool. parallel_for hands out task indices dynamically; the caller thread
// works too. Kernels parallelise inside an operator; operators run one after another, so workers
// spin briefly between jobs before sleeping: a ResNet-50 inference forks ~100 times and a
// condition-variable wake-up per fork costs more than a short spin.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
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
  int64_t tasks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace lowbit
