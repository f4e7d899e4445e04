// The HIP lane's proof: every emitted HIP kernel compiled to an AMD GPU code
// object by hipcc (Debian's ROCm 5.2; $TESSERA_HIPCC overrides). There is no
// AMD GPU here, so nothing runs: this is a compile check, labelled as such.
// ROCm 5.2 knows gfx90a (MI200) but not gfx1100+/gfx1151 (RDNA3 / Strix Halo).
#pragma once
#include <string>

#include "ir/target_dialect.hpp"

namespace tessera::runtime::hip {

inline constexpr const char* kHipArch = "gfx90a";

struct CodeObject {
  std::string arch;
  std::string toolchain;  // "HIP version: ..." as hipcc reports it
  std::string path;       // the ELF code object, in the content-addressed cache
  size_t bytes = 0;
  // Its bytes, read under the cache's lock and checked against the digest
  // recorded when it was built (the file may be evicted once compile returns).
  std::string image;
};

// E740 when hipcc cannot be run, E741 when it rejects the kernel (with its
// log), E701 when the source does not match its recorded sha256.
CodeObject compile(const ir::KernelDesc& kernel, const std::string& arch = kHipArch);

}  // namespace tessera::runtime::hip
