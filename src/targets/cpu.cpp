// The CPU lane: C++ kernels compiled by the host compiler and run natively on
// this host's cores (native_cpu); matmuls may call OpenBLAS.
#include <fmt/core.h>

#include <cstdlib>

#include "render/cpp_renderer.hpp"
#include "runtime/cpu_executable.hpp"
#include "runtime/library/openblas.hpp"
#include "runtime/thread_pool.hpp"
#include "targets/lane.hpp"

namespace tessera::targets {

namespace {

MeasuringIdentity cpu_identity() {
  MeasuringIdentity id;
  id.device = runtime::CpuModuleCache::global().cpu_identity() + " | " +
              std::to_string(runtime::ThreadPool::global().size()) + " threads";
  std::string blas = "no openblas";
  try {
    blas = runtime::openblas_version();
  } catch (const Error&) {
  }
  // OpenBLAS's threads and core type move its timings; its config string does not say them.
  for (const char* env : {"OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OMP_NUM_THREADS"})
    if (const char* v = std::getenv(env)) blas += std::string(" ") + env + "=" + v;
  id.toolchain = runtime::CpuModuleCache::global().toolchain() + " | " + blas;
  return id;
}

Lane make_cpu_lane() {
  Lane l;
  l.name = "cpu";
  l.render = render::render_cpp_kernel;
  l.kernel_abi = render::kCpuKernelAbi;
  l.source_extension = ".cpp";
  l.package_proves = "emitted and digested; execution is proven elsewhere (docs/status.md)";
  l.execution = Execution::kNativeCpu;
  l.load = [](const ir::Module& m, const std::string& func) -> std::unique_ptr<runtime::Executable> {
    return std::make_unique<runtime::CpuExecutable>(runtime::CpuExecutable::load(m, func));
  };
  l.banner = [](const std::string& func) {
    return fmt::format("run @{} on target cpu ({} threads)", func, runtime::ThreadPool::global().size());
  };
  l.arbiter_lane = "cpu";
  l.identity = cpu_identity;
  return l;
}

}  // namespace

const Lane& cpu_lane() {
  static const Lane lane = make_cpu_lane();
  return lane;
}

}  // namespace tessera::targets
