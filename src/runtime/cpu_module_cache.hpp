// Compiles CPU kernel sources with the host C++ compiler into shared objects,
// cached on disk by content (runtime/disk_cache.hpp): the key covers the
// source SHA-256, the compiler's identity and version, the flags and the CPU's
// features, so an entry can never be stale. The source's own digest is
// checked once, at load: a kernel whose source no longer matches its recorded
// SHA-256 is refused (E701). A process loads each module once, and only
// after its cache entry passed its checks and kernel.so matched the digest
// recorded when it was built (otherwise it is rebuilt, warning E709).
//
// The kernels' standard headers (the tile library's #include block, most of
// a kernel's compile time; docs/journal.md) are precompiled once per
// compiler, flags, CPU and preprocessed header text without line markers (a
// GCC precompiled header, cached beside the modules; keyed on content only,
// so processes share it) and handed to every compile with -include. GCC uses
// it only if it matches the compile's options and otherwise reads the text
// (-Winvalid-pch logs why); a compile that fails with it (the header gone, or
// a compiler that rejects it) is retried without. The object code is the
// same either way.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ir/target_dialect.hpp"
#include "runtime/disk_cache.hpp"

namespace tessera::runtime {

using CpuKernelFn = void (*)(void* const* buffers, int64_t pid_begin, int64_t pid_end);

// A kernel source's standard headers: its leading #include lines (whole
// #if/#endif blocks around them), comments and blank lines skipped, up to the
// first line of code. Empty when it has none.
std::string leading_includes(const std::string& source);

class CpuModuleCache {
 public:
  explicit CpuModuleCache(const std::string& dir);
  static CpuModuleCache& global();  // under default_cache_root()

  // Safe from several threads at once (they compile in parallel); `compiled`
  // says whether this call compiled the kernel rather than found it.
  CpuKernelFn load(const ir::KernelDesc& k, bool* compiled = nullptr);
  std::string entry_dir(const ir::KernelDesc& k) const;  // where load() keeps it
  const CacheStats& stats() const { return stats_; }
  const CacheStats& header_stats() const { return header_stats_; }
  const std::string& compiler_identity() const { return compiler_id_; }
  // The CPU's model name and feature flags (part of every cache key).
  const std::string& cpu_identity() const { return cpu_features_; }
  std::string toolchain() const { return compiler_id_ + " " + flags_; }

 private:
  std::string key(const std::string& source_sha256) const;
  std::vector<std::string> command() const;  // the compiler and kFlags
  // The precompiled `includes` (path of the header to -include; "" when
  // there are none or they could not be precompiled).
  std::string precompiled_header(const std::string& includes);
  std::string preprocessed(const std::string& includes);

  DiskCache disk_;         // <dir>/cpu: kernel modules
  DiskCache header_disk_;  // <dir>/cpu-headers: precompiled standard headers
  std::string compiler_, compiler_id_, flags_, cpu_features_;
  std::map<std::string, void*> loaded_;         // entry dir -> dlopen handle
  std::map<std::string, std::string> headers_;  // includes -> precompiled header ("": none)
  std::mutex mu_;                               // loaded_, headers_, stats_
  std::mutex header_mu_;                        // held while a precompiled header is found or built
  CacheStats stats_;                            // kernel modules
  CacheStats header_stats_;                     // precompiled headers (not counted as kernels)
};

}  // namespace tessera::runtime
