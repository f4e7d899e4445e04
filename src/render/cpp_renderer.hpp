// Renders Tile IR kernels as C++ for the host CPU. Each kernel becomes
//   extern "C" void <name>(void* const* buffers, int64_t pid_begin, int64_t pid_end)
// running programs [pid_begin, pid_end); the runtime splits the grid over cores.
#pragma once
#include <string>

#include "ir/ir.hpp"

namespace tessera::render {

inline constexpr const char* kCpuKernelAbi = "tessera.cpu.v1(void* const* buffers, int64 pid_begin, int64 pid_end)";

// One self-contained translation unit: the tile library, then the kernel.
std::string render_cpp_kernel(const ir::Op& kernel);

}  // namespace tessera::render
