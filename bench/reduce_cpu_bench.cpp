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

#include "evidence/ceiling.hpp"
#include "ir/parser.hpp"
#include "passes/pipeline.hpp"
#include "runtime/cpu_executable.hpp"
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

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 8192, cols = 8192;
  int reps = 21;
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
  const auto* data = static_cast<const float*>(x.data());
  // Each round measures the ceiling and then the kernel back to back, so drift
  // in this machine's bandwidth moves both; the ratio is the median per round.
  for (const char* kind : {"sum", "max"})
    for (int axis : {1, 0}) {
      std::string out = axis == 1 ? std::to_string(rows) : std::to_string(cols);
      std::string in = std::to_string(rows) + "x" + std::to_string(cols);
      std::string text = "func @bench(%x: tensor<" + in + "xf32>) -> tensor<" + out +
                         "xf32> {\n  %y = tessera.reduce %x {kind = \"" + kind + "\", axes = [" + std::to_string(axis) +
                         "]} : tensor<" + in + "xf32> -> tensor<" + out + "xf32>\n  return %y : tensor<" + out +
                         "xf32>\n}\n";
      auto target = passes::lower(*ir::parse(text), ir::Layer::Target, "cpu");
      auto exe = runtime::CpuExecutable::load(*target);
      exe.run({x});  // warm-up
      evidence::cpu_read_ceiling_seconds(data, x.numel());
      std::vector<double> kernel, e2e, ceiling, ratio;
      std::string placement, digests;
      for (int r = 0; r < reps; ++r) {
        double c = evidence::cpu_read_ceiling_seconds(data, x.numel());
        auto t0 = Clock::now();
        auto res = exe.run({x});
        e2e.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        double k = 0;
        for (auto& l : res.launches) k += l.kernel_wall_ns / 1e9;
        kernel.push_back(k);
        ceiling.push_back(c);
        ratio.push_back(c / k);
        placement = res.launches.at(0).placement;
      }
      for (auto& kd : exe.kernels()) digests += std::string(digests.empty() ? "" : ",") + "\"" + kd.sha256 + "\"";
      std::printf(
          "{\"case\": \"%s_axis%d\", \"kind\": \"%s\", \"axis\": %d, \"shape\": [%lld, %lld], \"threads\": %d, "
          "\"reps\": %d, \"kernel_wall_s\": %.6g, \"end_to_end_s\": %.6g, \"gbs\": %.2f, "
          "\"ceiling_gbs\": %.2f, \"fraction_of_ceiling\": %.3f, \"placement\": \"%s\", \"kernels\": [%s]}\n",
          kind, axis, kind, axis, (long long)rows, (long long)cols, runtime::ThreadPool::global().size(), reps,
          median(kernel), median(e2e), bytes / median(kernel) / 1e9, bytes / median(ceiling) / 1e9, median(ratio),
          placement.c_str(), digests.c_str());
      std::fflush(stdout);
    }
  return 0;
}
