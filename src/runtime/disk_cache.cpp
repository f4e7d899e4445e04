#include "runtime/disk_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "support/diagnostic.hpp"
#include "support/sha256.hpp"

namespace tessera::runtime {

namespace fs = std::filesystem;

namespace {

bool is_digest(const nlohmann::json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string read_fd(int fd) {
  std::string out;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ArtifactMismatch(std::string("cannot read it: ") + std::strerror(errno));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

DiskCache::DiskCache(std::string root, const std::string& ns)
    : root_(std::move(root)), dir_((fs::path(root_) / ns).string()), max_bytes_(cache_max_bytes()) {}

std::string DiskCache::entry_dir(const std::string& key) const { return (fs::path(dir_) / key).string(); }

std::string DiskCache::check_entry(const std::string& dir, const EntrySpec& spec) {
  const fs::path d(dir);
  std::set<std::string> expected(spec.files.begin(), spec.files.end());
  expected.insert("entry.json");
  std::set<std::string> present;
  std::error_code ec;
  for (auto it = fs::directory_iterator(d, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!expected.count(name)) return "unexpected file '" + name + "'";
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) return "'" + name + "' is not a regular file";
    present.insert(name);
  }
  if (ec) return "cannot list it: " + ec.message();
  for (const std::string& f : expected)
    if (!present.count(f)) return "'" + f + "' is missing";

  nlohmann::json entry;
  try {
    entry = nlohmann::json::parse(read_text_file((d / "entry.json").string()));
  } catch (const std::exception&) {
    return "entry.json is not JSON";
  }
  if (!entry.is_object()) return "entry.json is not an object";
  for (auto& [k, v] : entry.items())
    if (k != "files" && !spec.meta.contains(k)) return "entry.json has an unexpected field '" + k + "'";
  for (auto& [k, v] : spec.meta.items())
    if (!entry.contains(k) || entry[k] != v) return "entry.json's '" + k + "' is not this build's";
  const auto files = entry.find("files");
  if (files == entry.end() || !files->is_object()) return "entry.json's 'files' is not an object";
  if (files->size() != spec.files.size()) return "entry.json does not list exactly the entry's files";
  for (const std::string& f : spec.files) {
    const auto v = files->find(f);
    if (v == files->end() || !is_digest(*v)) return "entry.json has no SHA-256 for '" + f + "'";
    if (auto known = spec.known_sha256.find(f); known != spec.known_sha256.end() && *v != known->second)
      return "'" + f + "' is not the source this key was derived from";
    if (sha256_file_hex((d / f).string()) != v->get<std::string>()) return "'" + f + "' does not match its SHA-256";
  }
  return "";
}

std::string DiskCache::build_entry(const EntrySpec& spec, const std::function<void(const std::string&)>& build) {
  const fs::path tmp = fs::path(dir_) / temp_name("tmp-");
  std::error_code ec;
  fs::create_directories(tmp, ec);
  if (ec) fail("E704", "cannot create a build directory under '" + dir_ + "': " + ec.message());
  try {
    build(tmp.string());
    nlohmann::json entry = spec.meta;
    entry["files"] = nlohmann::json::object();
    for (const std::string& f : spec.files) entry["files"][f] = sha256_file_hex((tmp / f).string());
    std::ofstream e(tmp / "entry.json", std::ios::binary);
    e << entry.dump(2) << "\n";
    e.close();
    if (!e) fail("E704", "cannot write a cache entry under '" + dir_ + "'");
    // Never publish what a later check would refuse (a builder that left other files).
    if (std::string bad = check_entry(tmp.string(), spec); !bad.empty())
      fail("E705", "kernel cache entry is invalid right after building it: " + tmp.string() + " (" + bad + ")");
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return tmp.string();
}

std::string DiskCache::get(const std::string& key, const EntrySpec& spec,
                           const std::function<void(const std::string&)>& build, CacheStats& stats, const Use& use) {
  if (!root_checked_) {
    ensure_private_dir(root_);
    ensure_private_dir(dir_);
    root_checked_ = true;
  }
  std::string dir = entry_dir(key);
  // A built entry is published under the shared lock, just before it is
  // checked and used: no process can evict it in between.
  std::string built;
  for (;;) {
    std::string why;
    bool used = false;
    std::error_code ec;
    {
      CacheLock lock(root_, /*exclusive=*/false);
      if (!built.empty()) {
        fs::rename(built, dir, ec);  // if another process published first, keep theirs
        if (ec) fs::remove_all(built, ec);
      }
      if (fs::exists(dir, ec)) {
        why = check_entry(dir, spec);
        if (why.empty()) {
          try {
            if (use) use(dir, nlohmann::json::parse(read_text_file((fs::path(dir) / "entry.json").string()))["files"]);
            touch_entry(dir);
            used = true;
          } catch (const ArtifactMismatch& e) {
            why = e.what();
          }
        }
      } else if (!built.empty()) {
        why = "it was removed as it was published";
      }
    }
    if (used) {
      if (built.empty()) ++stats.hits;
      else bound_after_publish(root_, dir, max_bytes_);
      return dir;
    }
    if (!built.empty())
      fail("E705", "kernel cache entry is invalid right after building it: " + dir + " (" + why + ")");
    if (!why.empty()) {
      // Never used: moved aside whole, so no process sees half of it.
      std::cerr << "warning[E709]: kernel cache entry " << dir << " failed its check (" << why
                << "): not loaded; rebuilding it\n";
      {
        CacheLock lock(root_, /*exclusive=*/true);
        fs::create_directories(fs::path(root_) / "trash", ec);
        const fs::path trash = fs::path(root_) / "trash" / temp_name("");
        fs::rename(dir, trash, ec);
        if (!ec) fs::remove_all(trash, ec);
      }
      ++stats.rebuilt;
    } else {
      ++stats.compiled;
    }
    built = build_entry(spec, build);
  }
}

namespace {

// The bytes of `path` read through one open file (no symlink followed),
// checked against `sha256`, and that file's identity.
std::string read_verified(const std::string& path, const std::string& sha256, FileIdentity* id) {
  const std::string name = fs::path(path).filename().string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw ArtifactMismatch("cannot open " + name);
  struct stat st {};
  std::string bytes;
  try {
    if (::fstat(fd, &st) != 0) throw ArtifactMismatch("cannot stat " + name);
    bytes = read_fd(fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (sha256_hex(bytes) != sha256) throw ArtifactMismatch(name + " does not match its SHA-256 as loaded");
  if (id) *id = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  return bytes;
}

}  // namespace

std::string verified_bytes(const std::string& path, const std::string& sha256) {
  return read_verified(path, sha256, nullptr);
}

FileIdentity verified_identity(const std::string& path, const std::string& sha256) {
  FileIdentity id;
  read_verified(path, sha256, &id);
  return id;
}

bool same_file(const std::string& path, const FileIdentity& id) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_dev) == id.dev &&
         static_cast<uint64_t>(st.st_ino) == id.ino;
}

}  // namespace tessera::runtime
