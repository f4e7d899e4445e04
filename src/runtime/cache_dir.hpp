// The kernel cache directory as a whole (docs/cache.md): where it is, that
// it belongs to this user alone, the lock that lets processes share it, and
// the bound on its size. Entries live in <root>/<namespace>/<key>/ (cpu,
// cpu-headers, cuda, hip; runtime/disk_cache.hpp fills them); an entry's
// directory modification time is its last use, and eviction drops the least
// recently used first.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

namespace tessera::runtime {

// The cache root the environment names: $TESSERA_CACHE_DIR, else
// $XDG_CACHE_HOME/tessera, else $HOME/.cache/tessera, else (none set) a
// directory of this user's own, /tmp/tessera-cache-<uid>, never a shared one.
// Pure: the arguments are the variables (nullptr when unset).
std::string cache_root_for(const char* cache_dir, const char* xdg_cache_home, const char* home, uid_t uid);
// That root for this process, created and checked (ensure_private_dir): E707.
std::string default_cache_root();

// Creates `dir` (mode 0700, parents as needed) unless it exists, then refuses
// (E707) a path that is not a directory, is owned by another user, or is
// group- or world-writable: anyone else who could write it could plant
// artifacts that this process would load. `in_shared_tmp`: the /tmp fallback,
// where the path itself must not be a symlink and must be exactly 0700.
void ensure_private_dir(const std::string& dir, bool in_shared_tmp = false);

// $TESSERA_CACHE_MAX_BYTES (a byte count, optionally with a K/M/G/T suffix
// in powers of 1024), else 2 GiB; malformed: E708.
uint64_t cache_max_bytes();
uint64_t parse_byte_count(const std::string& text);  // E708 when malformed

// flock(2) on <root>/lock. Shared while a process checks and loads an entry,
// exclusive while entries are moved out, so an entry is never evicted from
// under a process that is loading it (once loaded, eviction cannot touch it:
// the mapping or the bytes read keep it).
class CacheLock {
 public:
  CacheLock(const std::string& root, bool exclusive);
  ~CacheLock();
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_ = -1;
};

struct CacheEntryInfo {
  std::string ns, key, path;
  uint64_t bytes = 0;
  std::time_t last_used = 0;  // the entry directory's mtime
  int64_t last_used_ns = 0;   // the same, in nanoseconds (the LRU order)
};

struct CacheSummary {
  std::vector<CacheEntryInfo> entries;  // oldest use first
  uint64_t bytes = 0;
  int temp_dirs = 0;  // build and trash directories (in use, or left by a killed process)
};

// Every entry under `root` (a directory named by 64 hex digits in a namespace
// directory) with its size and last use. No lock; a missing root is empty.
CacheSummary scan_cache(const std::string& root);

struct PruneResult {
  int evicted = 0;
  uint64_t evicted_bytes = 0;
  int reclaimed = 0;  // temp directories of processes that are gone
};

// Under the exclusive lock: moves least recently used entries into
// <root>/trash until at most `max_bytes` remain (never the entry at
// `keep_path`), then deletes them, and reclaims build and trash directories
// whose process is gone and that are older than `stale_after_s`.
PruneResult prune_cache(const std::string& root, uint64_t max_bytes, const std::string& keep_path = "",
                        int stale_after_s = 3600);

// After `entry_dir` was published: adds it to the recorded total, and prunes
// as prune_cache does (keeping it) only when that total passes `max_bytes` or
// was last counted by a full scan over ten minutes ago.
PruneResult bound_after_publish(const std::string& root, const std::string& entry_dir, uint64_t max_bytes);

// Marks an entry used now (its directory's mtime), for LRU eviction.
void touch_entry(const std::string& entry_dir);

// A fresh name, unique across processes, for a build or trash directory:
// "<prefix><pid>-<random>", which stale-directory reclamation parses.
std::string temp_name(const std::string& prefix);

}  // namespace tessera::runtime
