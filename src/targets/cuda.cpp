// The CUDA lane: kernels compiled by NVRTC for the device found and run on it
// (native_gpu), timed by CUDA events; matmuls may call cuBLASLt.
#include <fmt/core.h>

#include "render/cuda_renderer.hpp"
#include "runtime/cuda/cuda_executable.hpp"
#include "targets/lane.hpp"

namespace tessera::targets {

namespace {

MeasuringIdentity cuda_identity() {
  const runtime::cuda::DeviceInfo& d = runtime::cuda::device_info();
  MeasuringIdentity id;
  id.device = d.name + " " + d.arch() + " driver " + std::to_string(d.driver_version);
  std::string lt = "no cublaslt";
  try {
    lt = runtime::cuda::cublaslt_version();
  } catch (const Error&) {
  }
  id.toolchain = runtime::cuda::CudaModuleCache::global().toolchain() + " | " + lt;
  return id;
}

Lane make_cuda_lane() {
  Lane l;
  l.name = "cuda";
  l.render = render::render_cuda_kernel;
  l.kernel_abi = render::kCudaKernelAbi;
  l.shared_memory = true;
  l.workspace = true;
  l.source_extension = ".cu";
  l.package_proves = "emitted and digested; execution is proven elsewhere (docs/status.md)";
  l.execution = Execution::kNativeGpu;
  l.load = [](const ir::Module& m, const std::string& func) -> std::unique_ptr<runtime::Executable> {
    return std::make_unique<runtime::cuda::CudaExecutable>(runtime::cuda::CudaExecutable::load(m, func));
  };
  l.device_clock = true;
  l.banner = [](const std::string& func) {
    return fmt::format("run @{} on target cuda ({}, {})", func, runtime::cuda::device_info().name,
                       runtime::cuda::CudaModuleCache::global().toolchain());
  };
  l.arbiter_lane = "cuda";
  l.identity = cuda_identity;
  l.environment = [] {
    const runtime::cuda::DeviceInfo& d = runtime::cuda::device_info();
    return nlohmann::json{{"gpu",
                           {{"name", d.name},
                            {"arch", d.arch()},
                            {"multiprocessors", d.multiprocessors},
                            {"driver_version", d.driver_version}}},
                          {"nvrtc", runtime::cuda::CudaModuleCache::global().toolchain()}};
  };
  l.device_copy_gbs = runtime::cuda::copy_bandwidth_gbs;
  l.evict_cache = [](runtime::Executable& exe) {
    runtime::cuda::evict_l2(static_cast<runtime::cuda::CudaExecutable&>(exe).stream());  // (this lane loaded it)
  };
  return l;
}

}  // namespace

const Lane& cuda_lane() {
  static const Lane lane = make_cuda_lane();
  return lane;
}

}  // namespace tessera::targets
