// A content-addressed namespace of build products in the cache directory
// (runtime/cache_dir.hpp), shared by the CPU, CUDA and HIP module caches:
// <root>/<ns>/<key>/ holds one entry's files and entry.json. The key is
// derived by the caller from the source digest and the toolchain (compiler
// identity, flags); entry.json records exactly the caller's metadata and
// every file's SHA-256, and is checked strictly before anything is used: the
// exact files, no others, regular files only, 64-digit digests that match,
// and the source file's digest equal to the one the key was derived from.
// The artifact is checked once more as it is loaded (`use`). An entry that
// fails any check is never used: it is moved aside, rebuilt, and the rebuild
// is reported on stderr (warning E709). docs/cache.md says what this does and
// does not defend against.
//
// An entry is built in a private temp directory and published with one
// rename, so concurrent processes cannot corrupt one another; it is
// published, checked and used under the cache's shared lock (eviction takes
// the exclusive one), and each publish then bounds the whole cache
// (cache_max_bytes(), least recently used first).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/cache_dir.hpp"

namespace tessera::runtime {

struct CacheStats {
  int hits = 0, compiled = 0, rebuilt = 0;
};

// What a valid entry holds.
struct EntrySpec {
  nlohmann::json meta;             // entry.json's fields besides "files", exactly
  std::vector<std::string> files;  // the entry's files besides entry.json, exactly
  // Files whose digest the caller already knows (the source the key names).
  std::map<std::string, std::string> known_sha256;
};

// Thrown by a `use` callback whose artifact is not what entry.json records.
struct ArtifactMismatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class DiskCache {
 public:
  // Entries under <root>/<ns>; root is checked by ensure_private_dir.
  DiskCache(std::string root, const std::string& ns);
  const std::string& root() const { return root_; }
  const std::string& dir() const { return dir_; }  // <root>/<ns>
  std::string entry_dir(const std::string& key) const;
  void set_max_bytes(uint64_t n) { max_bytes_ = n; }

  using Use = std::function<void(const std::string& dir, const nlohmann::json& files)>;
  // The entry for `key`, built by `build(tmp)` (which writes exactly
  // spec.files into tmp) unless a valid one exists. `use(dir, files)` runs
  // under the cache's shared lock once the entry has passed its checks (so no
  // process evicts it meanwhile); it loads the artifact, checking its digest
  // against files[name] (verified_bytes, verified_identity), and throws
  // ArtifactMismatch when it differs. Returns the entry directory.
  std::string get(const std::string& key, const EntrySpec& spec, const std::function<void(const std::string&)>& build,
                  CacheStats& stats, const Use& use = nullptr);

  // Why the entry at `dir` is not valid for `spec` ("" when it is).
  static std::string check_entry(const std::string& dir, const EntrySpec& spec);

 private:
  // Builds an entry in a fresh temp directory (entry.json written, checked); returns it.
  std::string build_entry(const EntrySpec& spec, const std::function<void(const std::string&)>& build);
  std::string root_, dir_;
  uint64_t max_bytes_;
  bool root_checked_ = false;
};

// The bytes of `path`, read once; ArtifactMismatch unless their SHA-256 is `sha256`.
std::string verified_bytes(const std::string& path, const std::string& sha256);
// A file's identity (device and inode), after checking through one open
// descriptor that its content has `sha256` (else ArtifactMismatch). Compare
// with same_file() after loading it by path.
struct FileIdentity {
  uint64_t dev = 0, ino = 0;
};
FileIdentity verified_identity(const std::string& path, const std::string& sha256);
bool same_file(const std::string& path, const FileIdentity& id);

std::string read_text_file(const std::string& path);

}  // namespace tessera::runtime
