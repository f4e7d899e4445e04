#include "runtime/thread_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace tessera::runtime {

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
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_n_ = n;
    parts_ = parts;
    next_part_.store(0);
    ++generation_;
  }
  wake_.notify_all();
  run_parts(fn, n, parts);
  // Every part is claimed; the ones workers claimed are done when no worker
  // is active. Then no worker holds `fn` any more.
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return active_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  while (true) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    int parts;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      // (finished, or every part already claimed: nothing to join)
      if (!job_ || next_part_.load() >= parts_) continue;
      job = job_;
      n = job_n_;
      parts = parts_;
      ++active_;
    }
    run_parts(*job, n, parts);
    std::lock_guard<std::mutex> lock(mu_);
    if (--active_ == 0) done_.notify_one();
  }
}

}  // namespace tessera::runtime
