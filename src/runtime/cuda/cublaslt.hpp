// The cuBLASLt library candidate on CUDA (the CUDA toolkit's libcublasLt,
// loaded with dlopen at first use, like the driver). A plan is made once per
// kernel at load: matrix layouts for the row-major call, the algorithm the
// library's heuristic picks, and a workspace; enqueue() then only calls
// cublasLtMatmul on the stream (capturable in CUDA graphs). f32 runs with
// CUBLAS_COMPUTE_32F, never TF32. E762 if the library is missing.
#pragma once
#include <cuda.h>

#include <memory>
#include <string>

#include "ir/library_call.hpp"

namespace tessera::runtime::cuda {

class CublasLtMatmul {
 public:
  explicit CublasLtMatmul(const ir::LibraryMatmul& call);
  ~CublasLtMatmul();
  CublasLtMatmul(const CublasLtMatmul&) = delete;
  CublasLtMatmul& operator=(const CublasLtMatmul&) = delete;
  // params: the launch's kernel-parameter array (pointers to the device
  // pointers of a, b, out), as cuLaunchKernel takes it.
  void enqueue(void* const* params, CUstream stream) const;

 private:
  struct Plan;
  std::unique_ptr<Plan> plan_;
};

// "cublaslt <version>" (cublasLtGetVersion), or E762.
std::string cublaslt_version();

}  // namespace tessera::runtime::cuda
