#include "runtime/disk_cache.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "support/diagnostic.hpp"
#include "support/sha256.hpp"

namespace tessera::runtime {

namespace fs = std::filesystem;

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string default_cache_root() {
  if (const char* d = std::getenv("TESSERA_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tessera";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/tessera";
}

std::string DiskCache::entry_dir(const std::string& key) const { return (fs::path(root_) / key).string(); }

bool DiskCache::valid(const std::string& dir, const nlohmann::json& meta) const {
  std::error_code ec;
  if (!fs::exists(fs::path(dir) / "entry.json", ec)) return false;
  try {
    auto entry = nlohmann::json::parse(read_text_file((fs::path(dir) / "entry.json").string()));
    for (auto& [k, v] : meta.items())
      if (entry.at(k) != v) return false;
    for (auto& [file, digest] : entry.at("files").items())
      if (sha256_file_hex((fs::path(dir) / file).string()) != digest) return false;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::string DiskCache::get(const std::string& key, const nlohmann::json& meta,
                           const std::function<void(const std::string&)>& build, CacheStats& stats) {
  const std::string dir = entry_dir(key);
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) fail("E704", "cannot create the kernel cache under '" + root_ + "': " + ec.message());
  if (valid(dir, meta)) {
    ++stats.hits;
    return dir;
  }
  std::random_device rd;
  const std::string tag = std::to_string(getpid()) + "-" + std::to_string(rd());
  if (fs::exists(dir, ec)) {  // corrupt or tampered: move aside atomically, then rebuild
    fs::path trash = fs::path(root_) / ("trash-" + tag);
    fs::rename(dir, trash, ec);
    fs::remove_all(trash, ec);
    ++stats.rebuilt;
  } else {
    ++stats.compiled;
  }
  fs::path tmp = fs::path(root_) / ("tmp-" + tag);
  fs::create_directories(tmp);
  try {
    build(tmp.string());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  nlohmann::json entry = meta;
  for (auto& f : fs::directory_iterator(tmp))
    entry["files"][f.path().filename().string()] = sha256_file_hex(f.path().string());
  {
    std::ofstream e(tmp / "entry.json", std::ios::binary);
    e << entry.dump(2) << "\n";
  }
  fs::rename(tmp, dir, ec);  // if another process published first, keep theirs
  if (ec) fs::remove_all(tmp, ec);
  if (!valid(dir, meta)) fail("E705", "kernel cache entry is invalid right after building it: " + dir);
  return dir;
}

}  // namespace tessera::runtime
