#include "runtime/cache_dir.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "support/diagnostic.hpp"

namespace tessera::runtime {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kDefaultMaxBytes = uint64_t{2} << 30;

bool is_entry_name(const std::string& name) {
  return name.size() == 64 &&
         std::all_of(name.begin(), name.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// "tmp-<pid>-...", "trash-<pid>-...", "pre-<pid>-..." (an older build's
// preprocessing scratch), or, under <root>/trash, "<pid>-...".
bool temp_owner(const std::string& name, bool in_trash, pid_t& pid) {
  std::string rest = name;
  if (!in_trash) {
    bool known = false;
    for (const char* prefix : {"tmp-", "trash-", "pre-"})
      if (rest.rfind(prefix, 0) == 0) rest = rest.substr(std::strlen(prefix)), known = true;
    if (!known) return false;
  }
  const size_t digits = rest.find_first_not_of("0123456789");
  if (digits == 0 || digits == std::string::npos || digits > 9) return false;
  pid = static_cast<pid_t>(std::stol(rest.substr(0, digits)));
  return true;
}

bool process_alive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

int64_t mtime_ns_of(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::time_t mtime_of(const fs::path& p) { return static_cast<std::time_t>(mtime_ns_of(p) / 1000000000); }

uint64_t bytes_of(const fs::path& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) n += static_cast<uint64_t>(st.st_size);
  }
  return n;
}

// The namespace directories under root (cpu, cpu-headers, ...): every
// directory but the trash.
std::vector<fs::path> namespaces(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(root, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->is_directory(ec) && !it->is_symlink(ec) && it->path().filename() != "trash") out.push_back(it->path());
  return out;
}

// Temp directories (name, and whether under <root>/trash).
std::vector<std::pair<fs::path, bool>> temp_dirs(const fs::path& root) {
  std::vector<std::pair<fs::path, bool>> out;
  std::error_code ec;
  pid_t pid;
  for (const fs::path& ns : namespaces(root))
    for (auto it = fs::directory_iterator(ns, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      if (temp_owner(it->path().filename().string(), false, pid)) out.emplace_back(it->path(), false);
  for (auto it = fs::directory_iterator(root / "trash", ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    out.emplace_back(it->path(), true);
  return out;
}

}  // namespace

std::string cache_root_for(const char* cache_dir, const char* xdg_cache_home, const char* home, uid_t uid) {
  if (cache_dir && *cache_dir) return cache_dir;
  if (xdg_cache_home && *xdg_cache_home) return std::string(xdg_cache_home) + "/tessera";
  if (home && *home) return std::string(home) + "/.cache/tessera";
  return "/tmp/tessera-cache-" + std::to_string(uid);
}

std::string default_cache_root() {
  const char* cache_dir = std::getenv("TESSERA_CACHE_DIR");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string root = cache_root_for(cache_dir, xdg, home, ::geteuid());
  const bool fallback = !(cache_dir && *cache_dir) && !(xdg && *xdg) && !(home && *home);
  ensure_private_dir(root, fallback);
  return root;
}

void ensure_private_dir(const std::string& dir, bool in_shared_tmp) {
  std::error_code ec;
  const fs::path p(dir);
  if (!in_shared_tmp && p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST)
    fail("E707", "cannot create the kernel cache directory '" + dir + "': " + std::strerror(errno));
  struct stat st {};
  // In /tmp anyone may have made the name first, as a symlink or a directory.
  const int rc = in_shared_tmp ? ::lstat(p.c_str(), &st) : ::stat(p.c_str(), &st);
  if (rc != 0) fail("E707", "cannot use the kernel cache directory '" + dir + "': " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) fail("E707", "the kernel cache path '" + dir + "' is not a directory");
  if (st.st_uid != ::geteuid())
    fail("E707", "refusing the kernel cache directory '" + dir + "': it is owned by uid " + std::to_string(st.st_uid) +
                     ", not by this user (" + std::to_string(::geteuid()) + ")");
  const mode_t forbidden = in_shared_tmp ? 077 : 022;
  if (st.st_mode & forbidden) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    fail("E707", "refusing the kernel cache directory '" + dir + "': its mode " + mode +
                     (in_shared_tmp ? " is not 0700" : " lets other users write it") +
                     " (they could plant the artifacts Tessera loads); chmod go-w it or set TESSERA_CACHE_DIR");
  }
}

uint64_t parse_byte_count(const std::string& text) {
  size_t used = 0;
  unsigned long long n = 0;
  try {
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) throw std::invalid_argument(text);
    n = std::stoull(text, &used);
  } catch (const std::exception&) {
    fail("E708", "malformed byte count '" + text + "' (a number, optionally followed by K, M, G or T)");
  }
  const std::string suffix = text.substr(used);
  int shift = 0;
  if (suffix == "K") shift = 10;
  else if (suffix == "M") shift = 20;
  else if (suffix == "G") shift = 30;
  else if (suffix == "T") shift = 40;
  else if (!suffix.empty())
    fail("E708", "malformed byte count '" + text + "' (a number, optionally followed by K, M, G or T)");
  if (shift && n > (~uint64_t{0} >> shift)) fail("E708", "byte count '" + text + "' is too large");
  return static_cast<uint64_t>(n) << shift;
}

uint64_t cache_max_bytes() {
  const char* v = std::getenv("TESSERA_CACHE_MAX_BYTES");
  if (!v || !*v) return kDefaultMaxBytes;
  try {
    return parse_byte_count(v);
  } catch (const Error& e) {
    fail("E708", "TESSERA_CACHE_MAX_BYTES: " + e.message());
  }
}

CacheLock::CacheLock(const std::string& root, bool exclusive) {
  const std::string path = (fs::path(root) / "lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd_ < 0) fail("E704", "cannot open the kernel cache lock '" + path + "': " + std::strerror(errno));
  while (::flock(fd_, exclusive ? LOCK_EX : LOCK_SH) != 0)
    if (errno != EINTR) fail("E704", "cannot lock the kernel cache '" + path + "': " + std::strerror(errno));
}

CacheLock::~CacheLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

CacheSummary scan_cache(const std::string& root) {
  CacheSummary s;
  std::error_code ec;
  for (const fs::path& ns : namespaces(root)) {
    for (auto it = fs::directory_iterator(ns, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!is_entry_name(name) || !it->is_directory(ec) || it->is_symlink(ec)) continue;
      CacheEntryInfo e;
      e.ns = ns.filename().string();
      e.key = name;
      e.path = it->path().string();
      e.bytes = bytes_of(it->path());
      e.last_used_ns = mtime_ns_of(it->path());
      e.last_used = static_cast<std::time_t>(e.last_used_ns / 1000000000);
      s.bytes += e.bytes;
      s.entries.push_back(std::move(e));
    }
  }
  s.temp_dirs = static_cast<int>(temp_dirs(root).size());
  std::sort(s.entries.begin(), s.entries.end(), [](const CacheEntryInfo& a, const CacheEntryInfo& b) {
    return a.last_used_ns != b.last_used_ns ? a.last_used_ns < b.last_used_ns : a.path < b.path;
  });
  return s;
}

namespace {

// <root>/usage: "<bytes> <unix time of the last full scan>", kept under the
// exclusive lock, so a publish costs one small read and write instead of a
// scan of every entry. Entries added or removed behind its back (by hand, or
// by an older Tessera) are counted again at the next full scan.
constexpr int kRescanAfterS = 600;

bool read_usage(const std::string& root, uint64_t& bytes, std::time_t& scanned_at) {
  std::ifstream in(fs::path(root) / "usage");
  long long t = 0;
  if (!(in >> bytes >> t)) return false;
  scanned_at = static_cast<std::time_t>(t);
  return true;
}

void write_usage(const std::string& root, uint64_t bytes, std::time_t scanned_at) {
  const fs::path tmp = fs::path(root) / temp_name("usage-");
  {
    std::ofstream out(tmp);
    out << bytes << " " << static_cast<long long>(scanned_at) << "\n";
  }
  std::error_code ec;
  fs::rename(tmp, fs::path(root) / "usage", ec);
  if (ec) fs::remove(tmp, ec);
}

// The body of prune_cache, under the exclusive lock: what to delete once it
// is released goes to `doomed`; returns the bytes that remain.
uint64_t prune_locked(const std::string& root, uint64_t max_bytes, const std::string& keep_path, int stale_after_s,
                      PruneResult& r, std::vector<fs::path>& doomed) {
  std::error_code ec;
  const fs::path trash = fs::path(root) / "trash";
  CacheSummary s = scan_cache(root);
  uint64_t bytes = s.bytes;
  for (const CacheEntryInfo& e : s.entries) {
    if (bytes <= max_bytes) break;
    if (e.path == keep_path) continue;
    fs::create_directories(trash, ec);
    const fs::path to = trash / temp_name("");
    fs::rename(e.path, to, ec);
    if (ec) continue;
    doomed.push_back(to);
    bytes -= e.bytes;
    ++r.evicted;
    r.evicted_bytes += e.bytes;
  }
  const std::time_t now = std::time(nullptr);
  for (auto& [dir, in_trash] : temp_dirs(root)) {
    pid_t pid = 0;
    const bool parsed = temp_owner(dir.filename().string(), in_trash, pid);
    // Our own trash of this call is deleted below; anything else waits
    // until its process is gone and it has sat long enough not to be a
    // build on another host that shares this directory.
    if (std::find(doomed.begin(), doomed.end(), dir) != doomed.end()) continue;
    if (parsed && process_alive(pid)) continue;
    // (no grace, as for a cache clear: any age, even a file time a second
    // ahead of this clock)
    if (stale_after_s > 0 && now - mtime_of(dir) < stale_after_s) continue;
    const fs::path to = trash / temp_name("");
    if (!in_trash) {
      fs::create_directories(trash, ec);
      fs::rename(dir, to, ec);
      if (ec) continue;
    }
    doomed.push_back(in_trash ? dir : to);
    ++r.reclaimed;
  }
  write_usage(root, bytes, now);
  return bytes;
}

void remove_doomed(const std::vector<fs::path>& doomed) {
  std::error_code ec;
  for (const fs::path& d : doomed) fs::remove_all(d, ec);  // nobody can reach these any more
}

}  // namespace

PruneResult prune_cache(const std::string& root, uint64_t max_bytes, const std::string& keep_path, int stale_after_s) {
  PruneResult r;
  std::vector<fs::path> doomed;
  {
    CacheLock lock(root, /*exclusive=*/true);
    prune_locked(root, max_bytes, keep_path, stale_after_s, r, doomed);
  }
  remove_doomed(doomed);
  return r;
}

PruneResult bound_after_publish(const std::string& root, const std::string& entry_dir, uint64_t max_bytes) {
  PruneResult r;
  std::vector<fs::path> doomed;
  {
    CacheLock lock(root, /*exclusive=*/true);
    uint64_t bytes = 0;
    std::time_t scanned_at = 0;
    const uint64_t added = bytes_of(entry_dir);
    if (read_usage(root, bytes, scanned_at) && std::time(nullptr) - scanned_at < kRescanAfterS &&
        bytes + added <= max_bytes) {
      write_usage(root, bytes + added, scanned_at);
      return r;
    }
    prune_locked(root, max_bytes, entry_dir, 3600, r, doomed);
  }
  remove_doomed(doomed);
  return r;
}

void touch_entry(const std::string& entry_dir) { ::utimensat(AT_FDCWD, entry_dir.c_str(), nullptr, 0); }

std::string temp_name(const std::string& prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return prefix + std::to_string(::getpid()) + "-" + std::to_string(rng());
}

}  // namespace tessera::runtime
