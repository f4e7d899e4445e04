#include "runtime/hip/hip_toolchain.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/disk_cache.hpp"
#include "runtime/process.hpp"
#include "support/sha256.hpp"

namespace tessera::runtime::hip {

namespace fs = std::filesystem;

namespace {
// Device code only, as a plain ELF code object (no offload bundle).
constexpr const char* kFlags = "-O3 -std=c++17 --cuda-device-only --no-gpu-bundle-output -c";

std::string hipcc() {
  const char* env = std::getenv("TESSERA_HIPCC");
  return env && *env ? env : "hipcc";
}

// "HIP version: 5.2.21153-0; Debian clang version 15.0.6" from `hipcc --version`
// (which may also print a rocm_agent_enumerator traceback on a machine
// without an AMD GPU: ignored).
std::string toolchain_id(const std::string& cc) {
  std::istringstream in(output_of({cc, "--version"}));
  std::string id;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("HIP version", 0) == 0 || line.find("clang version") != std::string::npos)
      id += (id.empty() ? "" : "; ") + line;
  return id;
}
}  // namespace

CodeObject compile(const ir::KernelDesc& k, const std::string& arch) {
  if (sha256_hex(k.source) != k.sha256)
    fail("E701", "kernel @" + k.sym + " refused: its source does not match its recorded sha256 " + k.sha256);
  const std::string cc = hipcc();
  CodeObject co;
  co.arch = arch;
  co.toolchain = toolchain_id(cc);
  if (co.toolchain.empty())
    fail("E740", "hipcc ('" + cc +
                     "') cannot be run: the HIP lane's compile check needs it (apt-get install "
                     "hipcc, or set TESSERA_HIPCC)");
  static DiskCache disk(default_cache_root(), "hip");
  CacheStats stats;
  const nlohmann::json meta = {
      {"source_sha256", k.sha256}, {"toolchain", co.toolchain}, {"arch", arch}, {"flags", kFlags}};
  const std::string key = sha256_hex("tessera-hip-code-object-v1\n" + meta.dump());
  const EntrySpec spec = {meta, {"kernel.hip", "kernel.co", "compile.log"}, {{"kernel.hip", k.sha256}}};
  const std::string dir = disk.get(
      key, spec,
      [&](const std::string& tmp) {
        const std::string src = (fs::path(tmp) / "kernel.hip").string();
        std::ofstream(src, std::ios::binary) << k.source;
        std::vector<std::string> argv = {cc, "--offload-arch=" + arch};
        for (auto& f : split_flags(kFlags)) argv.push_back(f);
        argv.insert(argv.end(), {"-o", (fs::path(tmp) / "kernel.co").string(), src});
        const std::string log = (fs::path(tmp) / "compile.log").string();
        if (run_process(argv, log) != 0)
          fail("E741",
               "hipcc rejected kernel @" + k.sym + " for " + arch + ":\n" + read_text_file(log).substr(0, 4000));
      },
      stats,
      [&](const std::string& entry, const nlohmann::json& files) {
        co.image = verified_bytes((fs::path(entry) / "kernel.co").string(), files.at("kernel.co").get<std::string>());
      });
  co.path = (fs::path(dir) / "kernel.co").string();
  co.bytes = co.image.size();
  return co;
}

}  // namespace tessera::runtime::hip
