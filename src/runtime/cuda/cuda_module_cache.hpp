// Compiles CUDA kernel sources with NVRTC into cubins, cached on disk by
// content (runtime/disk_cache.hpp): the key covers the source SHA-256, the
// NVRTC version, the architecture (e.g. sm_90a) and the options. The source's
// digest is checked once, at load (E701); each module is loaded into the
// context once per process; launches never hash.
#pragma once
#include <map>
#include <mutex>
#include <string>

#include "ir/target_dialect.hpp"
#include "runtime/cuda/cuda_api.hpp"
#include "runtime/disk_cache.hpp"

namespace tessera::runtime::cuda {

// NVRTC -> cubin for `arch` (e.g. "sm_90a"); needs no GPU. E733 with the log.
std::string nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                          std::string* log = nullptr);

class CudaModuleCache {
 public:
  explicit CudaModuleCache(std::string dir);
  static CudaModuleCache& global();

  CUfunction load(const ir::KernelDesc& k);
  const CacheStats& stats() const { return stats_; }
  std::string toolchain() const;  // "nvrtc 13.0 sm_90a"

 private:
  DiskCache disk_;
  std::string arch_, options_;
  int nvrtc_major_ = 0, nvrtc_minor_ = 0;
  std::map<std::string, CUmodule> loaded_;
  std::mutex mu_;
  CacheStats stats_;
};

}  // namespace tessera::runtime::cuda
