#include "lowbit/runtime/thread_pool.h"

#include <algorithm>
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

// A share's unclaimed range [lo, hi) in one word.
constexpr int64_t kMaxTasks = int64_t{1} << 31;
inline uint64_t pack(int64_t lo, int64_t hi) { return static_cast<uint64_t>(lo) | static_cast<uint64_t>(hi) << 32; }
inline int64_t low(uint64_t r) { return static_cast<int64_t>(r & 0xffffffffu); }
inline int64_t high(uint64_t r) { return static_cast<int64_t>(r >> 32); }

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
  if (tasks > kMaxTasks) {  // the shares hold 32-bit indices: fork in slices
    for (int64_t t0 = 0; t0 < tasks; t0 += kMaxTasks)
      parallel_for(std::min(kMaxTasks, tasks - t0), [&](int64_t t, int thread) { fn(t0 + t, thread); });
    return;
  }
  job_ = &fn;
  const int n = size();
  for (int i = 0; i < n; ++i) shares_[i].range.store(pack(tasks * i / n, tasks * (i + 1) / n), std::memory_order_relaxed);
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

// Own share first, from the front, one task at a time; then the others' leftovers, the back half
// of what is left each time. Each index is claimed exactly once (the ranges a compare-exchange
// takes are disjoint). Taking the others' next task one at a time, as this pool did before, made
// both threads hit one cache line per task once one of them ran out: the 7 x 7 and 14 x 14
// depthwise convs of MobileNetV2 int8, a few hundred ~0.1 us planes each, ran slower on 2 threads
// than on 1 (0.87-0.92x). Halves keep the owner's front in image order and the thief's claims few.
void ThreadPool::run_shares(const std::function<void(int64_t, int)>& fn, int index) {
  const int n = size();
  Share& own = shares_[index];
  for (uint64_t r = own.range.load(std::memory_order_relaxed);;) {
    const int64_t lo = low(r), hi = high(r);
    if (lo >= hi) break;
    if (!own.range.compare_exchange_weak(r, pack(lo + 1, hi), std::memory_order_relaxed)) continue;
    fn(lo, index);
    r = own.range.load(std::memory_order_relaxed);
  }
  for (int k = 1; k < n; ++k) {
    Share& s = shares_[(index + k) % n];
    for (uint64_t r = s.range.load(std::memory_order_relaxed);;) {
      const int64_t lo = low(r), hi = high(r);
      if (lo >= hi) break;
      const int64_t from = hi - std::max<int64_t>(1, (hi - lo) / 2);
      if (!s.range.compare_exchange_weak(r, pack(lo, from), std::memory_order_relaxed)) continue;
      for (int64_t t = from; t < hi; ++t) fn(t, index);
      r = s.range.load(std::memory_order_relaxed);
    }
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
