#include "evidence/provenance.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "runtime/cpu_module_cache.hpp"
#include "runtime/thread_pool.hpp"
#include "support/diagnostic.hpp"
#include "support/sha256.hpp"
#include "targets/lane.hpp"

namespace tessera::evidence {

namespace fs = std::filesystem;

namespace {
std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int rc = pclose(p);
  return rc == 0 ? out : std::string();
}
std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}
std::string quote_arg(const std::string& s) { return "'" + s + "'"; }
}  // namespace

std::string source_root() {
  if (const char* r = std::getenv("TESSERA_SOURCE_ROOT"); r && *r) {
    if (!fs::exists(fs::path(r) / "src" / "ir") || !fs::exists(fs::path(r) / "CMakeLists.txt"))
      fail("E853", std::string("TESSERA_SOURCE_ROOT='") + r + "' is not a Tessera source tree");
    return r;
  }
  for (fs::path p = fs::current_path(); !p.empty(); p = p.parent_path()) {
    if (fs::exists(p / "src" / "ir") && fs::exists(p / "CMakeLists.txt")) return p.string();
    if (p == p.root_path()) break;
  }
  fail("E853", "cannot find the Tessera source tree (run from inside it, or set TESSERA_SOURCE_ROOT)");
}

// What produces kernels, runs them and calls them (python/: the Python front end).
const FingerprintScope& fingerprint_scope() {
  static const FingerprintScope scope{"src", "include", "device", "tools", "cmake", "python", "CMakeLists.txt"};
  return scope;
}

const FingerprintScope& legacy_fingerprint_scope() {
  static const FingerprintScope scope{"src", "include", "device", "tools", "cmake", "CMakeLists.txt"};
  return scope;
}

std::optional<FingerprintScope> recorded_scope(const nlohmann::json& source) {
  if (!source.contains("fingerprint_covers")) return legacy_fingerprint_scope();
  const nlohmann::json& covers = source["fingerprint_covers"];
  for (const FingerprintScope* known : {&fingerprint_scope(), &legacy_fingerprint_scope()})
    if (covers == nlohmann::json(*known)) return *known;
  return std::nullopt;
}

std::string source_fingerprint(const std::string& root, const FingerprintScope& scope) {
  std::vector<std::string> files;
  for (const std::string& path : scope) {
    const fs::path p = fs::path(root) / path;
    if (fs::is_regular_file(p)) files.push_back(path);
    if (!fs::is_directory(p)) continue;
    for (auto it = fs::recursive_directory_iterator(p); it != fs::recursive_directory_iterator(); ++it) {
      // Python's bytecode caches appear wherever the package is imported from; git never has them.
      if (it->is_directory() && it->path().filename() == "__pycache__") it.disable_recursion_pending();
      else if (it->is_regular_file()) files.push_back(fs::relative(it->path(), root).string());
    }
  }
  std::sort(files.begin(), files.end());
  std::string manifest;
  for (const std::string& f : files) manifest += f + '\0' + sha256_file_hex((fs::path(root) / f).string()) + "\n";
  return sha256_hex(manifest);
}

namespace {
// Only a checkout whose top level is this source tree vouches for it.
bool is_checkout_top(const std::string& root) {
  std::string top = trim(run_capture("git -C " + quote_arg(root) + " rev-parse --show-toplevel 2>/dev/null"));
  std::error_code ec;
  return !top.empty() && fs::equivalent(top, root, ec);
}
}  // namespace

std::optional<std::string> source_fingerprint_at(const std::string& root, const std::string& commit,
                                                 const FingerprintScope& scope) {
  if (commit.size() != 40 || commit.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  if (!is_checkout_top(root)) return std::nullopt;
  const std::string git = "git -C " + quote_arg(root) + " ";
  if (trim(run_capture(git + "cat-file -t " + commit + " 2>/dev/null")) != "commit") return std::nullopt;
  // Entries "<mode> <type> <object>\t<path>\0" of the fingerprinted paths, sorted by path as git sorts (bytewise).
  std::string paths;
  for (const std::string& p : scope) paths += " " + quote_arg(p);
  const std::string listing = run_capture(git + "ls-tree -r -z " + commit + " --" + paths + " 2>/dev/null");
  std::vector<std::pair<std::string, std::string>> blobs;  // path, object
  for (size_t at = 0; at < listing.size();) {
    const size_t end = listing.find('\0', at), tab = listing.find('\t', at);
    if (end == std::string::npos || tab == std::string::npos || tab > end) return std::nullopt;
    const std::string meta = listing.substr(at, tab - at), path = listing.substr(tab + 1, end - tab - 1);
    at = end + 1;
    if (meta.find(" blob ") == std::string::npos) continue;  // a submodule is no file in the working tree either
    blobs.emplace_back(path, meta.substr(meta.rfind(' ') + 1));
  }
  // Their contents in one `git cat-file --batch`: "<object> blob <size>\n<bytes>\n" each.
  char list_path[] = "/tmp/tessera-fingerprint-XXXXXX";
  const int fd = mkstemp(list_path);
  if (fd < 0) return std::nullopt;
  std::string ids;
  for (auto& b : blobs) ids += b.second + "\n";
  const bool listed = write(fd, ids.data(), ids.size()) == static_cast<ssize_t>(ids.size());
  close(fd);
  const std::string contents = listed ? run_capture(git + "cat-file --batch < " + quote_arg(list_path)) : "";
  unlink(list_path);
  std::vector<std::string> lines;  // "path\0sha256\n", as source_fingerprint() builds them
  size_t at = 0;
  for (auto& [path, object] : blobs) {
    const size_t header_end = contents.find('\n', at);
    if (header_end == std::string::npos) return std::nullopt;
    const std::string header = contents.substr(at, header_end - at);
    if (header.rfind(object + " blob ", 0) != 0) return std::nullopt;
    const size_t size = std::stoull(header.substr(header.rfind(' ') + 1));
    if (header_end + 1 + size > contents.size()) return std::nullopt;
    lines.push_back(path + '\0' + sha256_hex(std::string_view(contents).substr(header_end + 1, size)) + "\n");
    at = header_end + 1 + size + 1;
  }
  std::sort(lines.begin(), lines.end());
  std::string manifest;
  for (const std::string& l : lines) manifest += l;
  return sha256_hex(manifest);
}

GitState git_state(const std::string& root) {
  GitState g;
  if (!is_checkout_top(root)) return g;
  std::string commit = trim(run_capture("git -C " + quote_arg(root) + " rev-parse HEAD 2>/dev/null"));
  if (commit.size() != 40) return g;
  g.available = true;
  g.commit = commit;
  g.dirty_files = run_capture("git -C " + quote_arg(root) + " status --porcelain 2>/dev/null");
  g.dirty = !trim(g.dirty_files).empty();
  if (g.dirty_files.size() > 2000) g.dirty_files = g.dirty_files.substr(0, 2000) + "...";
  return g;
}

nlohmann::json environment(const std::string& target) {
  nlohmann::json env;
  std::ifstream in("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(in, line)) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = trim(line.substr(line.find(':') + 2));
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = line.substr(line.find(':') + 2);
  }
  utsname u{};
  uname(&u);
  env["cpu"] = {{"model", model},
                {"threads", runtime::ThreadPool::global().size()},
                {"avx512f", flags.find("avx512f") != std::string::npos},
                {"features_sha256", sha256_hex(flags)}};
  env["os"] = std::string(u.sysname) + " " + u.release;
  env["host_compiler"] = runtime::CpuModuleCache::global().compiler_identity();
  if (const targets::Lane* lane = targets::find(target); lane && lane->environment) {  // a device's identity
    const nlohmann::json device = lane->environment();  // named: items() would dangle on a temporary
    for (auto& [key, value] : device.items()) env[key] = value;
  }
  return env;
}

void stamp_source(nlohmann::json& packet, const std::string& root, const SealOptions& o) {
  GitState git = git_state(root);
  const std::string fingerprint = source_fingerprint(root);
  packet["source"] = {{"fingerprint", fingerprint},
                      {"fingerprint_covers", fingerprint_scope()},
                      {"commit", git.available ? git.commit : "unknown"},
                      {"git", git.available},
                      {"dirty", git.dirty}};
  bool clean = git.available && !git.dirty;
  // What `evidence verify` re-derives from the commit: a clean tree whose
  // fingerprinted directories hold files git does not track (ignored ones)
  // would record a fingerprint no commit has.
  if (clean && source_fingerprint_at(root, git.commit) != fingerprint) {
    clean = false;
    git.dirty_files =
        "files under src/, include/, device/, tools/, cmake/ or python/ that git ignores (the fingerprint covers "
        "them; commit " +
        git.commit + " does not)\n";
    packet["source"]["dirty"] = true;
  }
  if (!git.available && !o.expect_commit.empty()) {
    if (o.expect_fingerprint != fingerprint)
      fail("E855", "this tree's source fingerprint does not match the one given for commit " + o.expect_commit);
    packet["source"]["commit"] = o.expect_commit;
    packet["source"]["commit_proof"] = "no git here; the source fingerprint matched the given commit's";
    clean = true;
  }
  packet["sealed"] = clean;
  if (!clean && !o.allow_dirty)
    fail("E855", git.available ? "the working tree is dirty; commit first (or pass --unsealed to write an "
                                 "explicitly unsealed packet):\n" +
                                     git.dirty_files
                               : "no git checkout here to prove which commit was measured; pass --unsealed");
}

}  // namespace tessera::evidence
