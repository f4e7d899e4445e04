// The HIP lane's proof: every emitted HIP kernel compiled to an AMD GPU code
// object by clang-19 (Debian's; $TESSERA_HIP_CLANG overrides) against
// Debian's HIP headers and ROCm device libraries (5.2). There is no AMD GPU
// here, so nothing runs: this is a compile check, labelled as such. One
// toolchain serves every arch the HIP profiles name: gfx90a (CDNA2, wave64),
// gfx1100 (RDNA3) and gfx1151 (RDNA3.5), both wave32.
#pragma once
#include <string>

#include "ir/target_dialect.hpp"

namespace tessera::runtime::hip {

struct CodeObject {
  std::string arch;
  std::string toolchain;  // "Debian clang version 19.1.7 ...; HIP 5.2.21153"
  std::string path;       // the ELF code object, in the content-addressed cache
  size_t bytes = 0;
  // Its bytes, read under the cache's lock and checked against the digest
  // recorded when it was built (the file may be evicted once compile returns).
  std::string image;
};

// The arch a kernel is compiled for: its recorded device's (KernelDesc::device),
// else the HIP lane's default profile's.
std::string kernel_arch(const ir::KernelDesc& kernel);

// E740 when the compiler cannot be run, E741 when it rejects the kernel (with
// its log), E701 when the source does not match its recorded sha256.
CodeObject compile(const ir::KernelDesc& kernel);

}  // namespace tessera::runtime::hip
