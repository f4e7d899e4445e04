// Renders Tile IR kernels as CUDA C++ for NVRTC. A program is a thread block
// (blockIdx.x), or a cluster of `cluster` blocks (clusterid.x); the kernel's
// `threads` attribute is its block size. Buffers are the kernel's parameters,
// in order.
#pragma once
#include <string>

#include "ir/ir.hpp"

namespace tessera::render {

inline constexpr const char* kCudaKernelAbi = "tessera.cuda.v1(buffer pointers in order; grid.x = programs)";
// A kernel whose program is a thread-block cluster (tile.kernel 'cluster' > 1):
// its source fixes the cluster shape (__cluster_dims__), Target IR records
// cluster = C and grid = [programs * C] (blocks), and a plain launch of that
// grid forms the clusters.
inline constexpr const char* kCudaClusterKernelAbi =
    "tessera.cuda.v1(buffer pointers in order; grid.x = programs * cluster, __cluster_dims__(cluster, 1, 1))";

std::string render_cuda_kernel(const ir::Op& kernel);

// The HIP lane: the same kernel as HIP C++ (hipcc, AMD wavefronts of 64).
inline constexpr const char* kHipKernelAbi = "tessera.hip.v1(buffer pointers in order; grid.x = programs)";
std::string render_hip_kernel(const ir::Op& kernel);

}  // namespace tessera::render
