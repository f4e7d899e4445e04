// The calling conventions a Target IR kernel record names (its `abi`): the
// contract between the renderer that writes a kernel and the runtime that
// loads it. They live below both so that the runtime need not depend on the
// renderers (docs/architecture.md, "Layers").
#pragma once
#include <string>

namespace tessera::ir {

// The symbol a rendered kernel's source defines, named by its artifact hash
// (the schedule it came from) and not by its func: the same kernel in a
// renamed func, or in another program, is the same source, digest and cache
// entry. The Target IR keeps readable names (@block_k3) for people.
inline std::string kernel_entry_symbol(const std::string& artifact_hash) {
  return "tsr_" + artifact_hash.substr(0, 16);
}

inline constexpr const char* kCpuKernelAbi = "tessera.cpu.v1(void* const* buffers, int64 pid_begin, int64 pid_end)";
inline constexpr const char* kCudaKernelAbi = "tessera.cuda.v1(buffer pointers in order; grid.x = programs)";
// A kernel whose program is a thread-block cluster (tile.kernel 'cluster' > 1):
// its source fixes the cluster shape (__cluster_dims__), Target IR records
// cluster = C and grid = [programs * C] (blocks), and a plain launch of that
// grid forms the clusters.
inline constexpr const char* kCudaClusterKernelAbi =
    "tessera.cuda.v1(buffer pointers in order; grid.x = programs * cluster, __cluster_dims__(cluster, 1, 1))";
// The HIP lane: the same kernel as HIP C++ (clang-19; AMD wavefronts of 32 or 64).
inline constexpr const char* kHipKernelAbi = "tessera.hip.v1(buffer pointers in order; grid.x = programs)";
inline constexpr const char* kMetalKernelAbi =
    "tessera.metal.v1(buffer(i) = buffer pointers in order; threadgroups = programs, 1-D)";

}  // namespace tessera::ir
