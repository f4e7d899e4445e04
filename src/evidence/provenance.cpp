#include "evidence/provenance.hpp"

#include <sys/utsname.h>

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

std::string source_fingerprint(const std::string& root) {
  std::vector<std::string> files;
  for (const char* dir : {"src", "include", "device", "tools", "cmake"}) {
    fs::path d = fs::path(root) / dir;
    if (!fs::exists(d)) continue;
    for (auto& e : fs::recursive_directory_iterator(d))
      if (e.is_regular_file()) files.push_back(fs::relative(e.path(), root).string());
  }
  if (fs::exists(fs::path(root) / "CMakeLists.txt")) files.push_back("CMakeLists.txt");
  std::sort(files.begin(), files.end());
  std::string manifest;
  for (const std::string& f : files) manifest += f + '\0' + sha256_file_hex((fs::path(root) / f).string()) + "\n";
  return sha256_hex(manifest);
}

GitState git_state(const std::string& root) {
  GitState g;
  // Only a checkout whose top level is this source tree vouches for it.
  std::string top = trim(run_capture("git -C " + quote_arg(root) + " rev-parse --show-toplevel 2>/dev/null"));
  std::error_code ec;
  if (top.empty() || !fs::equivalent(top, root, ec)) return g;
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

}  // namespace tessera::evidence
