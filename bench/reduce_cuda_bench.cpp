// CUDA reduction benchmark on device-resident tensors. For each case: upload
// once, bind once, warm up, then time launches with CUDA events (device time
// of the whole program, every kernel of it) and, separately, the host launch
// path (enqueue only, no events). Prints one JSON object per case;
// bench/run_cuda_reduce.py adds PyTorch and Triton on the same shapes.
//
//   tessera_bench_cuda [--reps N] [--only CASE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ir/parser.hpp"
#include "passes/pipeline.hpp"
#include "runtime/cuda/cuda_executable.hpp"
#include "runtime/inputs.hpp"

using namespace tessera;
using namespace tessera::runtime::cuda;
using Clock = std::chrono::steady_clock;

namespace {

struct Case {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<int64_t> axes;
  std::string kind;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string program_text(const Case& c) {
  std::string in = "tensor<";
  for (auto d : c.shape) in += std::to_string(d) + "x";
  in += "f32>";
  std::vector<int64_t> out_shape;
  for (size_t i = 0; i < c.shape.size(); ++i)
    if (std::find(c.axes.begin(), c.axes.end(), int64_t(i)) == c.axes.end()) out_shape.push_back(c.shape[i]);
  std::string out = "tensor<";
  for (auto d : out_shape) out += std::to_string(d) + "x";
  out += "f32>";
  std::string axes;
  for (auto a : c.axes) axes += (axes.empty() ? "" : ", ") + std::to_string(a);
  return "func @bench(%x: " + in + ") -> " + out + " {\n  %y = tessera.reduce %x {kind = \"" + c.kind + "\", axes = [" +
         axes + "]} : " + in + " -> " + out + "\n  return %y : " + out + "\n}\n";
}

}  // namespace

int run(int argc, char** argv);

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

int run(int argc, char** argv) {
  int reps = 50;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
  }
  const std::vector<Case> cases = {
      {"sum_16384x16384_axis1", {16384, 16384}, {1}, "sum"}, {"sum_16384x16384_axis0", {16384, 16384}, {0}, "sum"},
      {"max_16384x16384_axis1", {16384, 16384}, {1}, "max"}, {"max_16384x16384_axis0", {16384, 16384}, {0}, "max"},
      {"sum_262144x1024_axis1", {262144, 1024}, {1}, "sum"}, {"sum_1024x262144_axis1", {1024, 262144}, {1}, "sum"},
      {"sum_268435456_full", {268435456}, {0}, "sum"},       {"sum_4096x1024_axis1", {4096, 1024}, {1}, "sum"},
      {"sum_64x128_axis1", {64, 128}, {1}, "sum"},
  };
  const DeviceInfo& dev = device_info();
  std::printf("{\"device\": \"%s\", \"arch\": \"%s\", \"driver\": %d, \"toolchain\": \"%s\"}\n", dev.name.c_str(),
              dev.arch().c_str(), dev.driver_version, CudaModuleCache::global().toolchain().c_str());
  for (const Case& c : cases) {
    if (!only.empty() && c.name != only) continue;
    auto target = passes::lower(*ir::parse(program_text(c)), ir::Layer::Target, "cuda");
    CudaExecutable exe = CudaExecutable::load(*target);
    Tensor host = generate_input("random:seed=7", DType::F32, c.shape);
    std::unique_ptr<runtime::Binding> b = exe.bind({host});
    for (int i = 0; i < 3; ++i) exe.launch(*b, runtime::Timing::each_kernel), exe.finish(*b);
    std::vector<double> device_us;
    for (int r = 0; r < reps; ++r) {
      exe.launch(*b, runtime::Timing::each_kernel);
      double total = 0;
      for (auto& l : exe.finish(*b)) total += std::max(0.0, l.device_event_ns);
      device_us.push_back(total / 1e3);
    }
    // The host launch path: enqueue only (no events, no sync), many in a row.
    std::vector<double> host_us;
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      exe.launch(*b, runtime::Timing::none);
      host_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      exe.finish(*b);
    }
    std::string digests, schedule;
    for (auto& k : exe.schedule().kernels) digests += std::string(digests.empty() ? "" : ", ") + "\"" + k.sha256 + "\"";
    const double bytes = double(host.nbytes());
    const double dev_us = median(device_us);
    std::printf(
        "{\"case\": \"%s\", \"kind\": \"%s\", \"shape\": [%lld%s], \"bytes\": %.0f, \"kernels\": %zu, "
        "\"device_us\": %.3f, \"tbs\": %.3f, \"host_launch_us\": %.3f, \"reps\": %d, "
        "\"placement\": \"native_gpu\", \"digests\": [%s]}\n",
        c.name.c_str(), c.kind.c_str(), (long long)c.shape[0],
        c.shape.size() > 1 ? (", " + std::to_string(c.shape[1])).c_str() : "", bytes, exe.schedule().steps.size(),
        dev_us, bytes / dev_us / 1e6, median(host_us), reps, digests.c_str());
    std::fflush(stdout);
  }
  return 0;
}
