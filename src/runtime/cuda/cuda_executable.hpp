// A loaded Target IR func for CUDA. Tensors live on the device: inputs are
// uploaded once, launches are asynchronous on the executable's stream, and
// results stay on the device until read. bind() allocates a run's outputs and
// intermediates once; launch() only enqueues kernels (the host launch path),
// optionally bracketed by CUDA events that give each kernel's device time.
// The CUDA lane (src/targets/cuda.cpp) loads it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/cublaslt.hpp"
#include "runtime/cuda/cuda_api.hpp"
#include "runtime/cuda/cuda_module_cache.hpp"
#include "runtime/executable.hpp"
#include "runtime/host_schedule.hpp"
#include "runtime/tensor.hpp"

namespace tessera::runtime::cuda {

// A device allocation with its type; copies share the allocation.
class DeviceTensor {
 public:
  static DeviceTensor empty(DType dtype, std::vector<int64_t> shape);
  // Stream-ordered: allocated on `stream` and freed on it when the last copy
  // goes (cuMemAllocAsync/cuMemFreeAsync), so a launch path never waits.
  static DeviceTensor empty_on(DType dtype, std::vector<int64_t> shape, CUstream stream);
  // A view of device memory the caller owns (a torch or CuPy tensor), kept
  // alive by `owner`.
  static DeviceTensor borrow(DType dtype, std::vector<int64_t> shape, CUdeviceptr ptr, std::shared_ptr<void> owner);
  static DeviceTensor upload(const Tensor& host, CUstream stream = nullptr);
  Tensor download(CUstream stream = nullptr) const;  // waits for the stream

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t nbytes() const;
  CUdeviceptr ptr() const { return mem_ ? *mem_ : 0; }

 private:
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  std::shared_ptr<CUdeviceptr> mem_;
};

// Device-to-device copy bandwidth (read + write bytes / event time, median of
// 20): the ceiling CUDA packets are judged against.
double copy_bandwidth_gbs(size_t bytes);

// Writes over the device's whole L2 (four times its size) on `stream`: what
// a kernel enqueued after it reads comes from device memory (cold-cache
// measurements). Nothing waits: the GPU is still busy writing when the
// timed launch's first event is enqueued, so the host's launch latency
// stays outside the events, as in a run of back-to-back launches.
void evict_l2(CUstream stream);

class CudaExecutable final : public Executable {
 public:
  static CudaExecutable load(const ir::Module& target_ir, const std::string& func = "",
                             CudaModuleCache& cache = CudaModuleCache::global());
  ~CudaExecutable() override;
  CudaExecutable(CudaExecutable&&) noexcept;
  CudaExecutable& operator=(CudaExecutable&&) = delete;

  // bind(): uploads the inputs once and makes the run's device buffers, kernel
  // argument arrays and a CUDA graph of its launches (one cuGraphLaunch per
  // launch not clocked per kernel, whatever the kernel count). launch()
  // enqueues every kernel and returns at once; clocked each_kernel, kernels
  // are launched one by one, events bracketing each; clocked whole_run, events
  // bracket the graph. finish() waits for the stream and reads the events.
  // outputs() downloads the results.
  std::unique_ptr<Binding> bind(const std::vector<Tensor>& inputs) const override;
  void launch(Binding& b, Timing timing) const override;
  std::vector<LaunchRecord> finish(Binding& b) const override;
  std::vector<Tensor> outputs(const Binding& b) const override;

  CUstream stream() const { return stream_; }

  // Runs on the caller's device memory without copies: the launches are
  // enqueued on the caller's `stream` and not waited for, the results
  // allocated on that stream. The kernels go as one CUDA graph (a graph
  // launch costs the host less than one cuLaunchKernel, even for a single
  // kernel), built on the first call; later calls only update the arguments
  // of the kernels whose buffers moved. Intermediates live in buffers the
  // graph owns, which is safe because the driver orders every launch of a
  // graph after the previous one, whatever the stream. A program with a
  // library kernel launches kernel by kernel, intermediates allocated per call.
  std::vector<DeviceTensor> run_device(const std::vector<DeviceTensor>& inputs, CUstream stream) const;
  // One record per launch of a run_device call: the same every call, without
  // device times (nothing waits).
  const std::vector<LaunchRecord>& device_launches() const { return device_launches_; }

 private:
  struct DeviceBinding;
  struct DeviceRuns;
  CudaExecutable();
  // Upload, bind, launch (timed), finish, download.
  RunResult run_on(const std::vector<Tensor>& inputs, ThreadPool* pool, bool keep_values) const override;
  // The kernel arguments of every step from b.ptrs: pointers, then tensor
  // maps (E612 guards).
  void set_params(DeviceBinding& b) const;
  void encode_maps(DeviceBinding& b, size_t step) const;  // after the step's buffers moved
  // A zeroed workspace, made on `stream`, for every step whose kernel keeps one.
  void make_workspaces(DeviceBinding& b, CUstream stream) const;
  void launch_each(const DeviceBinding& b, bool timed, CUstream stream) const;
  void build_graph(DeviceRuns& d) const;
  CUDA_KERNEL_NODE_PARAMS node_params(const DeviceBinding& b, size_t step) const;

  std::vector<CUfunction> fns_;                             // null for library kernels
  std::vector<std::shared_ptr<CublasLtMatmul>> libraries_;  // per kernel; null for synthesized ones
  std::vector<std::string> implementations_;
  CUstream stream_ = nullptr;
  std::vector<CUevent> events_;  // two per step, then two around a whole run
  mutable Timing timing_ = Timing::none;
  mutable std::vector<double> enqueue_ns_;  // per step (each_kernel) or in [0] (whole_run), of the last clocked launch
  std::vector<LaunchRecord> device_launches_;
  std::unique_ptr<DeviceRuns> device_;  // run_device's state, behind its mutex
};

}  // namespace tessera::runtime::cuda
