// Renders Tile IR kernels as C++ for the host CPU. Each kernel becomes
//   extern "C" void <name>(void* const* buffers, int64_t pid_begin, int64_t pid_end)
// running programs [pid_begin, pid_end); the runtime splits the grid over cores.
#pragma once
#include <string>

#include "ir/ir.hpp"
#include "ir/kernel_abi.hpp"

namespace tessera::render {

using ir::kCpuKernelAbi;

// One self-contained translation unit: the tile library, then the kernel.
std::string render_cpp_kernel(const ir::Op& kernel);

}  // namespace tessera::render
