// The arbiter's runners: the CPU (host wall time around each launch) and CUDA
// (device events around each launch, inputs resident on the device).
#include <algorithm>
#include <cstdlib>

#include "arbiter/arbiter.hpp"
#include "runtime/cpu_module_cache.hpp"
#include "runtime/device_query.hpp"
#include "runtime/cuda/cuda_executable.hpp"
#include "runtime/executable.hpp"
#include "runtime/library/openblas.hpp"
#include "runtime/thread_pool.hpp"

namespace tessera::arbiter {

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

Runner cpu_runner() {
  Runner r;
  r.target = "cpu";
  r.machine = runtime::describe_target("cpu");
  r.device = runtime::CpuModuleCache::global().cpu_identity() + " | " +
             std::to_string(runtime::ThreadPool::global().size()) + " threads";
  std::string blas = "no openblas";
  try {
    blas = runtime::openblas_version();
  } catch (const Error&) {
  }
  // OpenBLAS's threads and core type move its timings; its config string does not say them.
  for (const char* env : {"OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OMP_NUM_THREADS"})
    if (const char* v = std::getenv(env)) blas += std::string(" ") + env + "=" + v;
  r.toolchain = runtime::CpuModuleCache::global().toolchain() + " | " + blas;
  r.timing_domain = "kernel_wall";
  r.run = [](const ir::Module& target_ir, const std::vector<Tensor>& inputs, int reps) {
    runtime::Executable exe = runtime::Executable::load(target_ir);
    Runner::Measured m;
    std::vector<double> times;
    for (int i = 0; i <= reps; ++i) {
      runtime::RunResult res = exe.run(inputs);
      double t = 0;
      for (const auto& l : res.launches) t += l.kernel_wall_ns;
      if (i > 0) times.push_back(t);  // the first run warms caches
      m.outputs = std::move(res.outputs);
    }
    m.median_ns = median(times);
    return m;
  };
  return r;
}

Runner cuda_runner() {
  using runtime::cuda::CudaExecutable;
  using runtime::cuda::DeviceTensor;
  Runner r;
  r.target = "cuda";
  r.device = runtime::cuda::device_info().name + " " + runtime::cuda::device_info().arch() + " driver " +
             std::to_string(runtime::cuda::device_info().driver_version);
  std::string lt = "no cublaslt";
  try {
    lt = runtime::cuda::cublaslt_version();
  } catch (const Error&) {
  }
  r.toolchain = runtime::cuda::CudaModuleCache::global().toolchain() + " | " + lt;
  r.machine = runtime::cuda::describe_device();
  r.timing_domain = "device_event";
  r.run = [](const ir::Module& target_ir, const std::vector<Tensor>& inputs, int reps) {
    CudaExecutable exe = CudaExecutable::load(target_ir);
    std::vector<DeviceTensor> dev;
    for (const Tensor& t : inputs) dev.push_back(DeviceTensor::upload(t, exe.stream()));
    CudaExecutable::Binding b = exe.bind(dev);
    std::vector<double> times;
    for (int i = 0; i <= reps; ++i) {
      exe.launch(b, true);
      double t = 0;
      for (const auto& l : exe.finish()) t += std::max(l.device_event_ns, 0.0);
      if (i > 0) times.push_back(t);
    }
    Runner::Measured m;
    m.median_ns = median(times);
    for (int s : exe.schedule().result_slots) m.outputs.push_back(b.slots[s].download(exe.stream()));
    return m;
  };
  return r;
}

}  // namespace tessera::arbiter
