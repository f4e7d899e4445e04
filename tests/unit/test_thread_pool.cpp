// The thread pool: every program runs exactly once, whichever thread claims
// its part; back-to-back small jobs (the caller may run every part before a
// worker wakes) and callers on several threads.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "runtime/thread_pool.hpp"

namespace tessera::runtime {
namespace {

// Runs [0, n) on the pool; true if every index ran exactly once.
bool covers_once(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  pool.parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
  });
  for (auto& h : hits)
    if (h.load() != 1) return false;
  return true;
}

TEST(ThreadPool, EveryProgramRunsOnce) {
  for (int threads : {1, 2, 4, 7}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 3, 5, 8, 13, 64, 1000}) EXPECT_TRUE(covers_once(pool, n)) << threads << " " << n;
  }
}

TEST(ThreadPool, BackToBackSmallJobs) {
  ThreadPool pool(4);
  std::atomic<int64_t> total{0};
  for (int job = 0; job < 20000; ++job) pool.parallel_for(4, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
  EXPECT_EQ(total.load(), 4 * 20000);
}

TEST(ThreadPool, CallersOnSeveralThreadsTakeTurns) {
  ThreadPool pool(3);
  std::atomic<bool> all_ok{true};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      for (int job = 0; job < 500; ++job)
        if (!covers_once(pool, 1 + (job * 7 + c) % 50)) all_ok = false;
    });
  for (auto& t : callers) t.join();
  EXPECT_TRUE(all_ok.load());
}

}  // namespace
}  // namespace tessera::runtime
