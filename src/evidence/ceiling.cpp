#include "evidence/ceiling.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "runtime/thread_pool.hpp"

namespace tessera::evidence {

namespace {
typedef float v16 __attribute__((vector_size(64)));

// Built for AVX-512 and for plain x86-64; the loader picks what the CPU has,
// so the ceiling is as wide as the kernels it judges (built with -march=native).
__attribute__((target_clones("avx512f", "avx2", "default"))) void read_range(const float* data, int64_t lo, int64_t len,
                                                                             int streams, float* out16) {
  v16 acc[8] = {};
  for (int64_t i = 0; i < len; ++i)
    for (int s = 0; s < streams; ++s) {
      v16 x;
      std::memcpy(&x, data + 16 * (lo + s * len + i), 64);
      acc[s] += x;
    }
  v16 total{};
  for (int s = 0; s < streams; ++s) total += acc[s];
  std::memcpy(out16, &total, 64);  // through memory: the clones differ in vector ABI
}
}  // namespace

double cpu_read_pass_seconds(const float* data, int64_t n, int streams) {
  auto& pool = runtime::ThreadPool::global();
  static std::vector<float> sink(64 * 16);
  const int parts = pool.size();
  const int64_t blocks = n / 16;
  streams = std::clamp(streams, 1, 8);
  auto t0 = std::chrono::steady_clock::now();
  pool.parallel_for(parts, [&](int64_t b, int64_t e) {
    for (int64_t part = b; part < e; ++part) {
      const int64_t lo = blocks * part / parts, hi = blocks * (part + 1) / parts;
      read_range(data, lo, (hi - lo) / streams, streams, &sink[(part % 64) * 16]);
    }
  });
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double cpu_read_ceiling_seconds(const float* data, int64_t n) {
  return std::min(cpu_read_pass_seconds(data, n, 1), cpu_read_pass_seconds(data, n, 8));
}

}  // namespace tessera::evidence
