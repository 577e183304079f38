#include "lowbit/runtime/thread_pool.h"

#include <chrono>

namespace lowbit {
namespace {

// How long a thread spins for the next event before blocking: long enough to bridge the gap
// between two operators, short enough not to burn a core when the model is idle.
constexpr auto kSpin = std::chrono::microseconds(200);
// Blocked waits re-check their condition this often even without a notification. Every wake-up is
// sent under the lock, so none should be lost; but CI's AArch64 stage under qemu-user once hung in
// every test that ran a 2-thread pool (and in no 1-thread one), on a host where the same build and
// tests pass here. A lost wake-up now costs milliseconds, not the run. An idle worker wakes 100
// times a second to look (a few microseconds each); the caller, waiting inside a job, 500.
constexpr auto kRecheckIdle = std::chrono::milliseconds(10);
constexpr auto kRecheckJob = std::chrono::milliseconds(2);

inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins with `pause` for a few microseconds, then yields the core between checks: when another
// process holds the second core, the thread we wait for may share ours and must get to run.
template <class Pred>
bool spin_until(Pred done) {
  auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    if (i < 1024) {
      cpu_relax();
      continue;
    }
    std::this_thread::yield();
    if ((i & 63) == 0 && std::chrono::steady_clock::now() > until) return false;
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  if (threads <= 0) threads = 1;
  shares_ = std::make_unique<Share[]>(static_cast<size_t>(threads));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_.store(true);
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

// The hand-offs are lock-free: the job is published by the generation's release and read after
// its acquire, and a condition variable is notified only when the other side has said (under the
// mutex, then in `sleepers_` / `caller_blocked_`) that it is blocked on it. Every fork used to take
// the mutex on both sides and notify on every join: an empty 2-thread parallel_for took 1.1-1.6 us
// on the 2-vCPU Zen 5 VM, 0.85-1.25 us without (2 and 16 tasks), and MobileNetV2 int8 forks ~100
// times per inference (2 threads: 2.47 -> 2.37 ms). The sleeper counts and the predicates are
// sequentially consistent, so that of "publish, then look for sleepers" and "announce sleeping,
// then look at the predicate" at least one side sees the other.
void ThreadPool::parallel_for(int64_t tasks, const std::function<void(int64_t, int)>& fn) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {
    for (int64_t t = 0; t < tasks; ++t) fn(t, 0);
    return;
  }
  job_ = &fn;
  const int n = size();
  for (int i = 0; i < n; ++i) {
    shares_[i].next.store(tasks * i / n, std::memory_order_relaxed);
    shares_[i].end = tasks * (i + 1) / n;
  }
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lk(mu_);
    cv_start_.notify_all();
  }
  run_shares(fn, 0);
  auto done = [this] { return pending_.load(std::memory_order_seq_cst) == 0; };
  if (!spin_until(done)) {
    std::unique_lock<std::mutex> lk(mu_);
    caller_blocked_.store(true, std::memory_order_seq_cst);
    while (!cv_done_.wait_for(lk, kRecheckJob, done)) {
    }
    caller_blocked_.store(false, std::memory_order_relaxed);
  }
}

// Own share first, then the others' leftovers (each index is taken exactly once: fetch_add).
void ThreadPool::run_shares(const std::function<void(int64_t, int)>& fn, int index) {
  const int n = size();
  for (int k = 0; k < n; ++k) {
    Share& s = shares_[(index + k) % n];
    for (int64_t t; (t = s.next.fetch_add(1, std::memory_order_relaxed)) < s.end;) fn(t, index);
  }
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    auto ready = [&] { return stop_.load(std::memory_order_seq_cst) || generation_.load(std::memory_order_seq_cst) != seen; };
    if (!spin_until(ready)) {
      std::unique_lock<std::mutex> lk(mu_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      while (!cv_start_.wait_for(lk, kRecheckIdle, ready)) {
      }
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    const std::function<void(int64_t, int)>* job = job_;
    run_shares(*job, index);
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 && caller_blocked_.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lk(mu_);
      cv_done_.notify_one();
    }
  }
}

}  // namespace lowbit
