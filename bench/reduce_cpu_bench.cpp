// CPU reduction benchmark: Tessera kernels against a read-bandwidth ceiling
// measured in the same process (a STREAM-like read loop on every core).
// Prints one JSON object per line; bench/run_cpu_reduce.py adds numpy on the
// same arrays and prints the table. See bench/README.md.
//
//   tessera_bench_reduce [--rows R] [--cols C] [--reps N] [--save-input x.npy]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ir/parser.hpp"
#include "passes/pipeline.hpp"
#include "runtime/executable.hpp"
#include "runtime/inputs.hpp"
#include "runtime/npy.hpp"
#include "runtime/thread_pool.hpp"

using namespace tessera;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Reads every byte once per pass with independent vector accumulators: the
// best a reduction that reads its input once can do on this machine.
double read_ceiling_gbs(const float* data, int64_t n, int reps) {
  typedef float v16 __attribute__((vector_size(64)));
  auto& pool = runtime::ThreadPool::global();
  std::vector<float> sink(pool.size() * 16);
  std::vector<double> times;
  const int64_t blocks = n / 64;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    pool.parallel_for(pool.size(), [&](int64_t b, int64_t e) {
      for (int64_t part = b; part < e; ++part) {
        int64_t lo = blocks * part / pool.size(), hi = blocks * (part + 1) / pool.size();
        v16 a0{}, a1{}, a2{}, a3{};
        for (int64_t i = lo; i < hi; ++i) {
          v16 x0, x1, x2, x3;
          std::memcpy(&x0, data + 64 * i, 64);
          std::memcpy(&x1, data + 64 * i + 16, 64);
          std::memcpy(&x2, data + 64 * i + 32, 64);
          std::memcpy(&x3, data + 64 * i + 48, 64);
          a0 += x0; a1 += x1; a2 += x2; a3 += x3;
        }
        v16 s = a0 + a1 + a2 + a3;
        std::memcpy(&sink[part * 16], &s, 64);
      }
    });
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return double(n) * 4 / median(times) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 8192, cols = 8192;
  int reps = 15;
  std::string save;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--rows") rows = std::atoll(argv[i + 1]);
    else if (a == "--cols") cols = std::atoll(argv[i + 1]);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--save-input") save = argv[i + 1];
  }
  Tensor x = generate_input("random:seed=7", DType::F32, {rows, cols});
  if (!save.empty()) write_npy(save, x);
  const double bytes = double(x.nbytes());
  std::printf("{\"case\": \"read_ceiling\", \"threads\": %d, \"gbs\": %.2f}\n", runtime::ThreadPool::global().size(),
              read_ceiling_gbs(static_cast<const float*>(x.data()), x.numel(), reps));
  for (const char* kind : {"sum", "max"})
    for (int axis : {1, 0}) {
      std::string out = axis == 1 ? std::to_string(rows) : std::to_string(cols);
      std::string text = "func @bench(%x: tensor<" + std::to_string(rows) + "x" + std::to_string(cols) +
                         "xf32>) -> tensor<" + out + "xf32> {\n  %y = tessera.reduce %x {kind = \"" + kind +
                         "\", axes = [" + std::to_string(axis) + "]} : tensor<" + std::to_string(rows) + "x" +
                         std::to_string(cols) + "xf32> -> tensor<" + out + "xf32>\n  return %y : tensor<" + out +
                         "xf32>\n}\n";
      auto target = passes::lower(*ir::parse(text), ir::Layer::Target, "cpu");
      auto exe = runtime::Executable::load(*target);
      exe.run({x});  // warm-up
      std::vector<double> kernel, e2e;
      for (int r = 0; r < reps; ++r) {
        auto t0 = Clock::now();
        auto res = exe.run({x});
        e2e.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        double k = 0;
        for (auto& l : res.launches) k += l.kernel_wall_ns / 1e9;
        kernel.push_back(k);
      }
      std::printf("{\"case\": \"%s_axis%d\", \"kind\": \"%s\", \"axis\": %d, \"shape\": [%lld, %lld], "
                  "\"kernel_wall_s\": %.6g, \"end_to_end_s\": %.6g, \"gbs\": %.2f, \"placement\": \"native_cpu\"}\n",
                  kind, axis, kind, axis, (long long)rows, (long long)cols, median(kernel), median(e2e),
                  bytes / median(kernel) / 1e9);
    }
  return 0;
}
