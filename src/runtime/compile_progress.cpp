#include "runtime/compile_progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace tessera::runtime {

CompileProgress::CompileProgress(int64_t kernels)
    : total_(kernels), terminal_(::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

CompileProgress::~CompileProgress() {
  std::lock_guard<std::mutex> lock(mu_);
  if (drawn_) std::fprintf(stderr, "\r\033[K");
}

void CompileProgress::ready(bool compiled) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(compiled ? compiled_ : cached_);
  draw();
}

void CompileProgress::draw() {
  if (!terminal_ || std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) return;
  const int64_t done = compiled_ + cached_;
  std::fprintf(stderr, "\r\033[Kkernels: %lld of %lld ready (%lld compiled, %lld cached), %lld compiling or waiting",
               static_cast<long long>(done), static_cast<long long>(total_), static_cast<long long>(compiled_),
               static_cast<long long>(cached_), static_cast<long long>(total_ - done));
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace tessera::runtime
