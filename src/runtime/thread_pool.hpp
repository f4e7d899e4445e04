// A persistent pool that runs [0, n) programs split into one contiguous range
// (a part) per thread. Parts are claimed, not assigned: the caller runs parts
// until none is left, and a worker runs the ones it claims once it wakes, so
// a small kernel finishes on the caller without waiting for a worker to wake
// (a wake-up costs tens of microseconds). A worker that finished a job spins
// a short while (kSpin) before it sleeps, and so does a caller waiting for
// workers, so back-to-back small kernels (a training step's dozens) pay no
// wake-ups at all. Which thread runs a program never
// changes what it computes (programs are independent), so results do not
// depend on the thread count.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::runtime {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The process-wide pool: TESSERA_NUM_THREADS, else one per hardware thread.
  static ThreadPool& global();
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // fn(begin, end) on disjoint ranges covering [0, n); the caller takes part.
  // Calls from several threads take turns (one job at a time); fn must not
  // call parallel_for on the same pool.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop();
  // Runs parts of the current job until every part is claimed.
  void run_parts(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int parts);

  std::vector<std::thread> workers_;
  std::mutex turn_;  // held by the caller of the current job
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int parts_ = 0;
  std::atomic<int> next_part_{0};  // the next part to claim
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> active_{0};  // workers claiming parts of the current job
  int sleepers_ = 0;            // workers waiting on wake_ (under mu_)
  std::atomic<bool> stop_{false};
};

}  // namespace tessera::runtime
