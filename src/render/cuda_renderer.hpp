// Renders Tile IR kernels as CUDA C++ for NVRTC. A program is a thread block
// (blockIdx.x), or a cluster of `cluster` blocks (clusterid.x); the kernel's
// `threads` attribute is its block size. Buffers are the kernel's parameters,
// in order.
#pragma once
#include <string>

#include "ir/ir.hpp"
#include "ir/kernel_abi.hpp"

namespace tessera::render {

using ir::kCudaClusterKernelAbi;
using ir::kCudaKernelAbi;

std::string render_cuda_kernel(const ir::Op& kernel);

// The HIP lane: the same kernel as HIP C++ (clang-19; AMD wavefronts of 32 or 64).
using ir::kHipKernelAbi;
std::string render_hip_kernel(const ir::Op& kernel);

}  // namespace tessera::render
