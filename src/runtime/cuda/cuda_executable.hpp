// A loaded Target IR func for CUDA. Tensors live on the device: inputs are
// uploaded once, launches are asynchronous on the executable's stream, and
// results stay on the device until read. bind() allocates a run's outputs and
// intermediates once; launch() only enqueues kernels (the host launch path),
// optionally bracketed by CUDA events that give each kernel's device time.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_api.hpp"
#include "runtime/cuda/cublaslt.hpp"
#include "runtime/cuda/cuda_module_cache.hpp"
#include "runtime/executable.hpp"
#include "runtime/host_schedule.hpp"
#include "runtime/tensor.hpp"

namespace tessera::runtime::cuda {

// A device allocation with its type; copies share the allocation.
class DeviceTensor {
 public:
  static DeviceTensor empty(DType dtype, std::vector<int64_t> shape);
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

class CudaExecutable {
 public:
  static CudaExecutable load(const ir::Module& target_ir, const std::string& func = "",
                             CudaModuleCache& cache = CudaModuleCache::global());
  ~CudaExecutable();
  CudaExecutable(CudaExecutable&&) noexcept;
  CudaExecutable& operator=(CudaExecutable&&) = delete;

  // One run's device buffers, kernel argument arrays and a CUDA graph of its
  // launches (one cuGraphLaunch per untimed run, whatever the kernel count).
  struct Binding {
    std::vector<DeviceTensor> slots;
    std::vector<CUdeviceptr> ptrs;
    std::vector<std::vector<void*>> params;  // per step: pointers into ptrs, then into tensor_maps
    std::vector<std::shared_ptr<CUtensorMap>> tensor_maps;  // encoded once here; the graph copies them
    std::shared_ptr<CUgraphExec_st> graph;
  };
  Binding bind(const std::vector<DeviceTensor>& inputs) const;  // shape guards here (E611)
  // Enqueues every kernel (untimed: as one graph launch); returns at once.
  // With timed, kernels are launched one by one, events bracketing each.
  void launch(const Binding& b, bool timed = false) const;
  // Waits for the stream; with timed launches, reads each kernel's device time.
  std::vector<LaunchRecord> finish() const;

  // Convenience: upload, bind, launch (timed), finish, download.
  RunResult run(const std::vector<Tensor>& inputs) const;

  const HostSchedule& schedule() const { return h_; }
  CUstream stream() const { return stream_; }

 private:
  CudaExecutable() = default;
  HostSchedule h_;
  std::vector<CUfunction> fns_;  // null for library kernels
  std::vector<std::shared_ptr<CublasLtMatmul>> libraries_;  // per kernel; null for synthesized ones
  std::vector<std::string> implementations_;
  CUstream stream_ = nullptr;
  std::vector<CUevent> events_;  // two per step
  mutable bool timed_ = false;
  mutable std::vector<double> enqueue_ns_;  // per step, of the last timed launch
  void launch_each(const Binding& b, bool timed) const;
};

}  // namespace tessera::runtime::cuda
