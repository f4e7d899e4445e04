// Progress of a program's kernel compiles, on a terminal: once loading has
// taken a second, one line on stderr, rewritten in place ("kernels: 9 of 17
// ready (4 compiled, 5 cached), 8 compiling or waiting"), erased when done.
// Silent when stderr is not a terminal (logs and tests see no control
// characters) and for loads that finish within the second.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>

namespace tessera::runtime {

class CompileProgress {
 public:
  explicit CompileProgress(int64_t kernels);
  ~CompileProgress();
  CompileProgress(const CompileProgress&) = delete;
  CompileProgress& operator=(const CompileProgress&) = delete;

  // One kernel is ready: compiled now, or found in the cache.
  void ready(bool compiled);

 private:
  void draw();  // under mu_

  std::mutex mu_;
  const int64_t total_;
  int64_t compiled_ = 0, cached_ = 0;
  const bool terminal_;
  bool drawn_ = false;
  const std::chrono::steady_clock::time_point start_;
};

}  // namespace tessera::runtime
