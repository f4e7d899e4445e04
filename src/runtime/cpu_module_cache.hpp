// Compiles CPU kernel sources with the host C++ compiler into shared objects,
// cached on disk by content: the key covers the source SHA-256, the compiler's
// identity and version, the flags and the CPU's features, so an entry can never
// be stale. Entries are published atomically (a private temp directory renamed
// into place), so concurrent processes cannot corrupt one another; an entry
// whose files fail their recorded digests is rebuilt. The source's own digest
// is checked once, at load: a kernel whose source no longer matches its
// recorded SHA-256 is refused (E701).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "ir/target_dialect.hpp"

namespace tessera::runtime {

using CpuKernelFn = void (*)(void* const* buffers, int64_t pid_begin, int64_t pid_end);

struct CacheStats {
  int hits = 0, compiled = 0, rebuilt = 0;
};

class CpuModuleCache {
 public:
  explicit CpuModuleCache(std::string dir);
  // $TESSERA_CACHE_DIR, else $XDG_CACHE_HOME/tessera, else ~/.cache/tessera.
  static CpuModuleCache& global();

  CpuKernelFn load(const ir::KernelDesc& k);
  std::string entry_dir(const ir::KernelDesc& k) const;  // where load() keeps it
  const CacheStats& stats() const { return stats_; }
  const std::string& compiler_identity() const { return compiler_id_; }

 private:
  std::string key(const std::string& source_sha256) const;
  bool entry_valid(const std::string& dir, const std::string& source_sha256) const;
  void build_entry(const ir::KernelDesc& k, const std::string& final_dir);

  std::string dir_;
  std::string compiler_, compiler_id_, flags_, cpu_features_;
  std::map<std::string, void*> loaded_;  // entry dir -> dlopen handle
  std::mutex mu_;
  CacheStats stats_;
};

}  // namespace tessera::runtime
