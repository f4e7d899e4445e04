#include "runtime/cpu_module_cache.hpp"

#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "runtime/process.hpp"
#include "support/sha256.hpp"

namespace tessera::runtime {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFlags = "-std=c++20 -O3 -march=native -fPIC -shared -fno-math-errno -ffp-contract=off";
// After the source, so the linker records them: the tile library calls
// libmvec's vector math entry points (_ZGV...), which dlopen must resolve.
constexpr const char* kLibs = "-lmvec -lm";

std::string cpu_features() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(in, line)) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line;
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
  }
  return model + "|" + flags;
}

}  // namespace

std::string leading_includes(const std::string& source) {
  std::istringstream in(source);
  std::string line, block, kept;
  int depth = 0;
  auto starts = [&](const char* p) { return line.rfind(p, 0) == 0; };
  while (std::getline(in, line)) {
    if (line.empty() || starts("//")) continue;
    if (starts("#include")) {
      block += line + "\n";
    } else if (starts("#if")) {
      block += line + "\n", ++depth;
    } else if ((starts("#else") || starts("#elif")) && depth > 0) {
      block += line + "\n";
    } else if (starts("#endif") && depth > 0) {
      block += line + "\n", --depth;
    } else {
      break;
    }
    if (depth == 0) kept = block;  // only whole #if blocks
  }
  return kept;
}

CpuModuleCache::CpuModuleCache(const std::string& dir) : disk_(dir, "cpu"), header_disk_(dir, "cpu-headers") {
  const char* cxx = std::getenv("TESSERA_CXX");
  compiler_ = cxx && *cxx ? cxx : "g++";
  compiler_id_ = first_line_of_output({compiler_, "--version"});
  flags_ = std::string(kFlags) + " " + kLibs;
  cpu_features_ = cpu_features();
}

CpuModuleCache& CpuModuleCache::global() {
  static CpuModuleCache cache(default_cache_root());
  return cache;
}

std::string CpuModuleCache::key(const std::string& source_sha256) const {
  return sha256_hex("tessera-cpu-module-v1\n" + source_sha256 + "\n" + compiler_ + "\n" + compiler_id_ + "\n" + flags_ +
                    "\n" + cpu_features_);
}

std::string CpuModuleCache::entry_dir(const ir::KernelDesc& k) const { return disk_.entry_dir(key(k.sha256)); }

std::vector<std::string> CpuModuleCache::command() const {
  std::vector<std::string> argv = {compiler_};
  for (auto& f : split_flags(kFlags)) argv.push_back(f);
  return argv;
}

// The text the compiler sees for `includes`, so that a header changed under
// an unchanged compiler version gives a new precompiled header: GCC does not
// check a header's sources once it is built. -P drops the line markers,
// which name the scratch file: the key must depend on content alone, or every
// process would add a header of its own to the cache.
std::string CpuModuleCache::preprocessed(const std::string& includes) {
  const fs::path dir = fs::path(header_disk_.dir()) / temp_name("tmp-");
  fs::create_directories(dir);
  {
    std::ofstream h(dir / "prelude.hpp", std::ios::binary);
    h << includes;
  }
  std::vector<std::string> argv = command();
  argv.insert(argv.end(),
              {"-E", "-P", "-x", "c++", "-o", (dir / "prelude.i").string(), (dir / "prelude.hpp").string()});
  const bool ok = run_process(argv, (dir / "log").string()) == 0;
  std::string text = ok ? read_text_file((dir / "prelude.i").string()) : "";
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (!ok) fail("E703", "the host compiler cannot preprocess the kernels' standard headers");
  return text;
}

std::string CpuModuleCache::precompiled_header(const std::string& includes) {
  if (includes.empty()) return "";
  // One thread builds a header; the others wait for it rather than build it too.
  std::lock_guard<std::mutex> building(header_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = headers_.find(includes); it != headers_.end()) return it->second;
  }
  std::string header;
  try {
    const std::string key = sha256_hex("tessera-cpu-pch-v3\n" + sha256_hex(preprocessed(includes)) + "\n" + compiler_ +
                                       "\n" + compiler_id_ + "\n" + flags_ + "\n" + cpu_features_);
    const EntrySpec spec = {{{"compiler", compiler_}, {"compiler_version", compiler_id_}, {"flags", flags_}},
                            {"prelude.hpp", "prelude.hpp.gch", "compile.log"},
                            {{"prelude.hpp", sha256_hex(includes)}}};
    const std::string dir = header_disk_.get(
        key, spec,
        [&](const std::string& tmp) {
          {
            std::ofstream h(fs::path(tmp) / "prelude.hpp", std::ios::binary);
            h << includes;
          }
          std::vector<std::string> argv = command();
          argv.insert(argv.end(), {"-x", "c++-header", "-o", (fs::path(tmp) / "prelude.hpp.gch").string(),
                                   (fs::path(tmp) / "prelude.hpp").string()});
          if (run_process(argv, (fs::path(tmp) / "compile.log").string()) != 0)
            fail("E703", "the host compiler cannot precompile the kernels' standard headers");
        },
        header_stats_);  // under header_mu_
    header = (fs::path(dir) / "prelude.hpp").string();
  } catch (const std::exception&) {
    // Only a speed-up: the kernel compiles the same headers from text.
    header.clear();
  }
  std::lock_guard<std::mutex> lock(mu_);
  headers_[includes] = header;
  return header;
}

CpuKernelFn CpuModuleCache::load(const ir::KernelDesc& k, bool* compiled) {
  if (sha256_hex(k.source) != k.sha256)
    fail("E701", "kernel @" + k.sym + " refused: its source does not match its recorded sha256 " + k.sha256);
  void* handle = nullptr;
  const std::string dir = entry_dir(k);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = loaded_.find(dir); it != loaded_.end()) {
      handle = it->second;
      ++stats_.hits;
    }
  }
  if (compiled) *compiled = false;
  if (!handle) {
    // Outside mu_: threads compile different kernels at once, and the disk
    // cache keeps them apart the way it keeps processes apart.
    CacheStats stats;
    const EntrySpec spec = {
        {{"source_sha256", k.sha256}, {"compiler", compiler_}, {"compiler_version", compiler_id_}, {"flags", flags_}},
        {"kernel.cpp", "kernel.so", "compile.log"},
        {{"kernel.cpp", k.sha256}}};
    // Loaded under the cache's lock, after the entry's checks, and checked
    // again as it loads: the bytes hashed are the file dlopen maps.
    auto open_module = [&](const std::string& entry, const nlohmann::json& files) {
      const std::string so = (fs::path(entry) / "kernel.so").string();
      const FileIdentity id = verified_identity(so, files.at("kernel.so").get<std::string>());
      handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) fail("E706", std::string("cannot load compiled kernel: ") + dlerror());
      if (!same_file(so, id)) {
        dlclose(handle);  // else a rebuilt module at this path would get this handle back
        handle = nullptr;
        throw ArtifactMismatch("kernel.so was replaced while it was loaded");
      }
    };
    disk_.get(
        key(k.sha256), spec,
        [&](const std::string& tmp) {
          if (compiler_id_.empty())
            fail("E702", "the host C++ compiler '" + compiler_ +
                             "' cannot be run (set TESSERA_CXX); CPU kernels "
                             "cannot be built, and Tessera does not fall back to a reference");
          {
            std::ofstream src(fs::path(tmp) / "kernel.cpp", std::ios::binary);
            src << k.source;
          }
          const std::string includes = leading_includes(k.source);
          auto compile = [&](const std::string& pch) {
            std::vector<std::string> argv = command();
            // -Winvalid-pch: a header the compiler passes over says so in the log.
            if (!pch.empty()) argv.insert(argv.end(), {"-Winvalid-pch", "-include", pch});
            argv.insert(argv.end(),
                        {"-o", (fs::path(tmp) / "kernel.so").string(), (fs::path(tmp) / "kernel.cpp").string()});
            for (auto& f : split_flags(kLibs)) argv.push_back(f);
            return run_process(argv, (fs::path(tmp) / "compile.log").string()) == 0;
          };
          const std::string pch = precompiled_header(includes);
          bool ok = compile(pch);
          if (!ok && !pch.empty()) {
            // The header may have gone (a cleared cache) or be one this compiler
            // rejects outright (clang): compile from text, and stop using it.
            {
              std::lock_guard<std::mutex> lock(mu_);
              headers_[includes] = "";
            }
            ok = compile("");
          }
          if (!ok)
            fail("E703", "host compiler failed on kernel @" + k.sym + ":\n" +
                             read_text_file((fs::path(tmp) / "compile.log").string()).substr(0, 4000));
        },
        stats, open_module);
    if (compiled) *compiled = stats.compiled + stats.rebuilt > 0;
    std::lock_guard<std::mutex> lock(mu_);
    stats_.hits += stats.hits;
    stats_.compiled += stats.compiled;
    stats_.rebuilt += stats.rebuilt;
    loaded_.emplace(dir, handle);  // a thread that loaded it too got the same handle (dlopen counts)
  }
  auto fn = reinterpret_cast<CpuKernelFn>(dlsym(handle, k.entry.c_str()));
  if (!fn) fail("E706", "compiled module has no symbol '" + k.sym + "'");
  return fn;
}

}  // namespace tessera::runtime
