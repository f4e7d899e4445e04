// The CUDA driver API and NVRTC, loaded at run time with dlopen so that one
// build runs with or without a GPU. Prototypes come from the toolkit headers
// (build time only); nothing links against libcuda or libnvrtc.
#pragma once
#include <cuda.h>
#include <nvrtc.h>

#include <string>

namespace tessera::runtime::cuda {

struct DriverApi {
#define TSR_CU(name) decltype(&::name) name = nullptr;
  TSR_CU(cuInit)
  TSR_CU(cuDriverGetVersion)
  TSR_CU(cuDeviceGet)
  TSR_CU(cuDeviceGetCount)
  TSR_CU(cuDeviceGetName)
  TSR_CU(cuDeviceGetAttribute)
  TSR_CU(cuDevicePrimaryCtxRetain)
  TSR_CU(cuCtxSetCurrent)
  TSR_CU(cuModuleLoadData)
  TSR_CU(cuModuleGetFunction)
  TSR_CU(cuLaunchKernel)
  TSR_CU(cuFuncSetAttribute)
  TSR_CU(cuOccupancyMaxActiveClusters)
  TSR_CU(cuMemAlloc)
  TSR_CU(cuMemFree)
  TSR_CU(cuMemAllocAsync)
  TSR_CU(cuMemFreeAsync)
  TSR_CU(cuMemcpyHtoDAsync)
  TSR_CU(cuMemcpyDtoHAsync)
  TSR_CU(cuMemcpyDtoDAsync)
  TSR_CU(cuMemsetD8Async)
  TSR_CU(cuStreamCreate)
  TSR_CU(cuStreamSynchronize)
  TSR_CU(cuEventCreate)
  TSR_CU(cuEventRecord)
  TSR_CU(cuEventSynchronize)
  TSR_CU(cuEventElapsedTime)
  TSR_CU(cuEventDestroy)
  TSR_CU(cuGetErrorString)
  TSR_CU(cuStreamBeginCapture)
  TSR_CU(cuStreamEndCapture)
  TSR_CU(cuGraphInstantiate)
  TSR_CU(cuGraphLaunch)
  TSR_CU(cuGraphExecDestroy)
  TSR_CU(cuGraphDestroy)
  TSR_CU(cuGraphCreate)
  TSR_CU(cuGraphAddKernelNode)
  TSR_CU(cuGraphExecKernelNodeSetParams)
  TSR_CU(cuDeviceGetDefaultMemPool)
  TSR_CU(cuMemPoolSetAttribute)
  TSR_CU(cuTensorMapEncodeTiled)
#undef TSR_CU
};

struct NvrtcApi {
#define TSR_NV(name) decltype(&::name) name = nullptr;
  TSR_NV(nvrtcVersion)
  TSR_NV(nvrtcCreateProgram)
  TSR_NV(nvrtcCompileProgram)
  TSR_NV(nvrtcGetCUBINSize)
  TSR_NV(nvrtcGetCUBIN)
  TSR_NV(nvrtcGetProgramLogSize)
  TSR_NV(nvrtcGetProgramLog)
  TSR_NV(nvrtcDestroyProgram)
  TSR_NV(nvrtcGetErrorString)
#undef TSR_NV
};

// The driver, loaded and initialized once per process, with the primary
// context of device 0 current. Throws E730 (one clear line) when there is no
// driver or no device: Tessera never runs CUDA programs elsewhere instead.
const DriverApi& driver();
const NvrtcApi& nvrtc();  // E731 when NVRTC cannot be loaded

// Throws E732 with the driver's message when r is not CUDA_SUCCESS.
void check(CUresult r, const char* what);

struct DeviceInfo {
  std::string name;  // "NVIDIA H200"
  int sm_major = 0, sm_minor = 0, multiprocessors = 0;
  int driver_version = 0;  // e.g. 13000
  std::string arch() const { return "sm_" + std::to_string(sm_major * 10 + sm_minor); }
};
const DeviceInfo& device_info();
CUdevice device();

}  // namespace tessera::runtime::cuda
