// A persistent pool that runs [0, n) programs split into one contiguous range
// per thread. Which thread runs a program never changes what it computes
// (programs are independent), so results do not depend on the thread count.
#pragma once
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
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int parts_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace tessera::runtime
