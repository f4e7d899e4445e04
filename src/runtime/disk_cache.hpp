// A content-addressed directory of build products, shared by the CPU and CUDA
// module caches: <root>/<key>/ holds the files of one entry and entry.json,
// which records every file's SHA-256 and whatever the builder adds. An entry
// is built in a private temp directory and published with one rename, so
// concurrent processes cannot corrupt one another; an entry whose files no
// longer match their digests is moved aside and rebuilt.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace tessera::runtime {

struct CacheStats {
  int hits = 0, compiled = 0, rebuilt = 0;
};

class DiskCache {
 public:
  explicit DiskCache(std::string root) : root_(std::move(root)) {}
  const std::string& root() const { return root_; }
  std::string entry_dir(const std::string& key) const;

  // The entry for `key`, built by `build(dir)` (which writes files into dir)
  // unless a valid one exists. `meta` must match the recorded entry.json
  // fields for an existing entry to be valid. Returns the entry directory.
  std::string get(const std::string& key, const nlohmann::json& meta,
                  const std::function<void(const std::string& dir)>& build, CacheStats& stats);

 private:
  bool valid(const std::string& dir, const nlohmann::json& meta) const;
  std::string root_;
};

std::string read_text_file(const std::string& path);
// $TESSERA_CACHE_DIR, else $XDG_CACHE_HOME/tessera, else ~/.cache/tessera.
std::string default_cache_root();

}  // namespace tessera::runtime
