#include "runtime/cuda/cuda_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "support/diagnostic.hpp"

namespace tessera::runtime::cuda {
namespace {

void* open_first(const std::vector<std::string>& names, std::string& tried) {
  for (const std::string& n : names) {
    if (n.empty()) continue;
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    tried += (tried.empty() ? "" : ", ") + n;
  }
  return nullptr;
}

template <class F>
void bind(void* lib, F& fn, const char* symbol, const char* lib_name) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!fn) fail("E730", std::string(lib_name) + " has no symbol " + symbol + " (driver too old?)");
}

struct Driver {
  DriverApi api;
  CUdevice dev = 0;
  DeviceInfo info;
  std::string error;  // set when loading failed; rethrown on every use

  Driver() {
    try {
      load();
    } catch (const Error& e) {
      error = e.message();
    }
  }

  void load() {
    std::string tried;
    const char* env = std::getenv("TESSERA_CUDA_DRIVER");
    void* lib = open_first({env ? env : "", "libcuda.so.1", "libcuda.so"}, tried);
    if (!lib)
      fail("E730", "no CUDA driver on this machine (could not load " + tried +
                       "); --target cuda needs an NVIDIA GPU and its driver");
    // Versioned entry points, as cuda.h maps them for this toolkit.
    bind(lib, api.cuInit, "cuInit", "libcuda");
    bind(lib, api.cuDriverGetVersion, "cuDriverGetVersion", "libcuda");
    bind(lib, api.cuDeviceGet, "cuDeviceGet", "libcuda");
    bind(lib, api.cuDeviceGetCount, "cuDeviceGetCount", "libcuda");
    bind(lib, api.cuDeviceGetName, "cuDeviceGetName", "libcuda");
    bind(lib, api.cuDeviceGetAttribute, "cuDeviceGetAttribute", "libcuda");
    bind(lib, api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", "libcuda");
    bind(lib, api.cuCtxSetCurrent, "cuCtxSetCurrent", "libcuda");
    bind(lib, api.cuModuleLoadData, "cuModuleLoadData", "libcuda");
    bind(lib, api.cuModuleGetFunction, "cuModuleGetFunction", "libcuda");
    bind(lib, api.cuLaunchKernel, "cuLaunchKernel", "libcuda");
    bind(lib, api.cuFuncSetAttribute, "cuFuncSetAttribute", "libcuda");
    bind(lib, api.cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters", "libcuda");
    bind(lib, api.cuMemAlloc, "cuMemAlloc_v2", "libcuda");
    bind(lib, api.cuMemFree, "cuMemFree_v2", "libcuda");
    bind(lib, api.cuMemAllocAsync, "cuMemAllocAsync", "libcuda");
    bind(lib, api.cuMemFreeAsync, "cuMemFreeAsync", "libcuda");
    bind(lib, api.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", "libcuda");
    bind(lib, api.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", "libcuda");
    bind(lib, api.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", "libcuda");
    bind(lib, api.cuMemsetD8Async, "cuMemsetD8Async", "libcuda");
    bind(lib, api.cuStreamCreate, "cuStreamCreate", "libcuda");
    bind(lib, api.cuStreamSynchronize, "cuStreamSynchronize", "libcuda");
    bind(lib, api.cuEventCreate, "cuEventCreate", "libcuda");
    bind(lib, api.cuEventRecord, "cuEventRecord", "libcuda");
    bind(lib, api.cuEventSynchronize, "cuEventSynchronize", "libcuda");
    bind(lib, api.cuEventElapsedTime, "cuEventElapsedTime_v2", "libcuda");
    bind(lib, api.cuEventDestroy, "cuEventDestroy_v2", "libcuda");
    bind(lib, api.cuGetErrorString, "cuGetErrorString", "libcuda");
    bind(lib, api.cuStreamBeginCapture, "cuStreamBeginCapture_v2", "libcuda");
    bind(lib, api.cuStreamEndCapture, "cuStreamEndCapture", "libcuda");
    bind(lib, api.cuGraphInstantiate, "cuGraphInstantiateWithFlags", "libcuda");
    bind(lib, api.cuGraphLaunch, "cuGraphLaunch", "libcuda");
    bind(lib, api.cuGraphExecDestroy, "cuGraphExecDestroy", "libcuda");
    bind(lib, api.cuGraphDestroy, "cuGraphDestroy", "libcuda");
    bind(lib, api.cuGraphCreate, "cuGraphCreate", "libcuda");
    bind(lib, api.cuGraphAddKernelNode, "cuGraphAddKernelNode_v2", "libcuda");
    bind(lib, api.cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2", "libcuda");
    bind(lib, api.cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", "libcuda");
    bind(lib, api.cuMemPoolSetAttribute, "cuMemPoolSetAttribute", "libcuda");
    bind(lib, api.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", "libcuda");  // CUDA 12+ drivers

    CUresult r = api.cuInit(0);
    if (r != CUDA_SUCCESS) fail("E730", "the CUDA driver found no usable GPU (cuInit: " + message(r) + ")");
    int count = 0;
    api.cuDeviceGetCount(&count);
    if (count < 1) fail("E730", "the CUDA driver reports no GPU");
    check_here(api.cuDeviceGet(&dev, 0), "cuDeviceGet");
    CUcontext ctx;
    check_here(api.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check_here(api.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    // Stream-ordered allocations (results of calls on the caller's stream)
    // come from the device's default pool; by default it hands memory back
    // to the OS at every synchronize, and the next call pays for the
    // allocation again. Keep it, as a caching allocator does.
    CUmemoryPool pool = nullptr;
    check_here(api.cuDeviceGetDefaultMemPool(&pool, dev), "cuDeviceGetDefaultMemPool");
    cuuint64_t keep_all = ~cuuint64_t{0};
    check_here(api.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all), "cuMemPoolSetAttribute");
    char name[256] = {};
    api.cuDeviceGetName(name, sizeof name, dev);
    info.name = name;
    api.cuDeviceGetAttribute(&info.sm_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    api.cuDeviceGetAttribute(&info.sm_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    api.cuDeviceGetAttribute(&info.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    api.cuDriverGetVersion(&info.driver_version);
  }

  std::string message(CUresult r) const {
    const char* s = nullptr;
    if (api.cuGetErrorString) api.cuGetErrorString(r, &s);
    return s ? s : "CUDA error " + std::to_string(static_cast<int>(r));
  }
  void check_here(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) fail("E732", std::string(what) + ": " + message(r));
  }
};

Driver& the_driver() {
  static Driver d;
  if (!d.error.empty()) fail("E730", d.error);
  return d;
}

struct Nvrtc {
  NvrtcApi api;
  std::string error;
  Nvrtc() {
    std::string tried;
    const char* env = std::getenv("TESSERA_NVRTC");
    void* lib = open_first({env ? env : "", "libnvrtc.so.13", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13",
                            "/usr/local/cuda/lib64/libnvrtc.so"},
                           tried);
    if (!lib) {
      error = "NVRTC is not available (could not load " + tried + "); set TESSERA_NVRTC to libnvrtc.so";
      return;
    }
    try {
      bind(lib, api.nvrtcVersion, "nvrtcVersion", "libnvrtc");
      bind(lib, api.nvrtcCreateProgram, "nvrtcCreateProgram", "libnvrtc");
      bind(lib, api.nvrtcCompileProgram, "nvrtcCompileProgram", "libnvrtc");
      bind(lib, api.nvrtcGetCUBINSize, "nvrtcGetCUBINSize", "libnvrtc");
      bind(lib, api.nvrtcGetCUBIN, "nvrtcGetCUBIN", "libnvrtc");
      bind(lib, api.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", "libnvrtc");
      bind(lib, api.nvrtcGetProgramLog, "nvrtcGetProgramLog", "libnvrtc");
      bind(lib, api.nvrtcDestroyProgram, "nvrtcDestroyProgram", "libnvrtc");
      bind(lib, api.nvrtcGetErrorString, "nvrtcGetErrorString", "libnvrtc");
    } catch (const Error& e) {
      error = e.message();
    }
  }
};

}  // namespace

const DriverApi& driver() { return the_driver().api; }

const NvrtcApi& nvrtc() {
  static Nvrtc n;
  if (!n.error.empty()) fail("E731", n.error);
  return n.api;
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) the_driver().check_here(r, what);
}

const DeviceInfo& device_info() { return the_driver().info; }
CUdevice device() { return the_driver().dev; }

}  // namespace tessera::runtime::cuda
