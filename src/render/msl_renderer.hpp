// Renders Tile IR kernels as Metal Shading Language. A program is a
// threadgroup (threadgroup_position_in_grid); the kernel's `threads` attribute
// is its size, in simdgroups of 32. Buffers are [[buffer(i)]] in order. MSL
// has no 64-bit float and no erf/erfc: a kernel computing in f64 or using
// gelu's erf form is refused (E501/E502), never approximated.
#pragma once
#include <string>

#include "ir/ir.hpp"
#include "ir/kernel_abi.hpp"

namespace tessera::render {

using ir::kMetalKernelAbi;
// What the Darwin loader must compile with: the kernels rely on IEEE NaN/inf
// handling, which fast math (Metal's default) does not keep.
inline constexpr const char* kMetalCompileOptions = "-fno-fast-math";

std::string render_msl_kernel(const ir::Op& kernel);

}  // namespace tessera::render
