// The Metal lane's host emulation (placement `emulated_msl`): an MSL kernel
// from Target IR, its digest verified, becomes a host C++ translation unit
// (device/metal/msl_host_emulation.hpp + the MSL text unchanged + a CPU entry
// point that runs each program as one emulated threadgroup). That unit is an
// ordinary CPU kernel for the content-addressed CpuModuleCache, so its cache
// key covers the emulation header, the MSL and the host compiler.
#pragma once
#include "ir/target_dialect.hpp"

namespace tessera::runtime::metal {

// The CPU entry point's symbol for Metal kernel `sym`.
std::string emulated_symbol(const std::string& sym);

// E701 unless sha256(msl.source) == msl.sha256; E712 unless msl.target is
// "metal". The result is a target "cpu" descriptor with the same buffers.
ir::KernelDesc emulated_host_kernel(const ir::KernelDesc& msl);

}  // namespace tessera::runtime::metal
