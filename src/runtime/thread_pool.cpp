#include "runtime/thread_pool.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

namespace tessera::runtime {

namespace {

// How long an idle worker, or a caller waiting for workers, spins before it
// sleeps on a condition variable.
constexpr auto kSpin = std::chrono::microseconds(100);

// Spins until done() or kSpin has passed; whether done().
template <class Done>
bool spin_until(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) return false;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool([] {
    if (const char* env = std::getenv("TESSERA_NUM_THREADS")) {
      int n = std::atoi(env);
      if (n > 0) return n;
    }
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }());
  return pool;
}

static void run_part(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int parts, int index) {
  int64_t begin = n * index / parts, end = n * (index + 1) / parts;
  if (begin < end) fn(begin, end);
}

void ThreadPool::run_parts(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int parts) {
  for (int i = next_part_.fetch_add(1); i < parts; i = next_part_.fetch_add(1)) run_part(fn, n, parts, i);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int parts = static_cast<int>(std::min<int64_t>(size(), n));
  if (parts == 1) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> turn(turn_);
  bool sleeping = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_n_ = n;
    parts_ = parts;
    next_part_.store(0);
    generation_.fetch_add(1);
    sleeping = sleepers_ > 0;
  }
  if (sleeping) wake_.notify_all();  // (spinning workers see the generation)
  run_parts(fn, n, parts);
  // Every part is claimed; the ones workers claimed are done when no worker
  // is active (spun for first; then checked under the lock, since a worker
  // joins under it). Then no worker holds `fn` any more.
  spin_until([&] { return active_.load() == 0; });
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return active_.load() == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  while (true) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    int parts;
    spin_until([&] { return stop_.load() || generation_.load() != seen; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!stop_ && generation_.load() == seen) {
        ++sleepers_;
        wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
        --sleepers_;
      }
      if (stop_) return;
      seen = generation_.load();
      // (finished, or every part already claimed: nothing to join)
      if (!job_ || next_part_.load() >= parts_) continue;
      job = job_;
      n = job_n_;
      parts = parts_;
      active_.fetch_add(1);
    }
    run_parts(*job, n, parts);
    std::lock_guard<std::mutex> lock(mu_);
    if (active_.fetch_sub(1) == 1) done_.notify_one();
  }
}

}  // namespace tessera::runtime
