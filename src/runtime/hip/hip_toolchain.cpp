#include "runtime/hip/hip_toolchain.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "machine/descriptor.hpp"
#include "runtime/cache_dir.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/process.hpp"
#include "support/sha256.hpp"

namespace tessera::runtime::hip {

namespace fs = std::filesystem;

namespace {
// Device code only, as a plain ELF code object (no offload bundle).
constexpr const char* kFlags = "-O3 -std=c++17 --cuda-device-only --no-gpu-bundle-output -c";

std::string env_or(const char* name, const char* fallback) {
  const char* env = std::getenv(name);
  return env && *env ? env : fallback;
}
std::string clang() { return env_or("TESSERA_HIP_CLANG", "clang++-19"); }
// Debian's rocm-device-libs (ocml, ockl and the oclc control libraries).
std::string device_libs() { return env_or("TESSERA_ROCM_DEVICE_LIBS", "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"); }

// "Debian clang version 19.1.7 (3~deb12u1); HIP 5.2.21153" from the compiler
// and the HIP headers it compiles against.
std::string toolchain_id(const std::string& cc) {
  std::istringstream in(output_of({cc, "--version"}));
  std::string id;
  for (std::string line; std::getline(in, line);)
    if (line.find("clang version") != std::string::npos) id = line;
  if (id.empty()) return id;
  std::ifstream h("/usr/include/hip/hip_version.h");
  std::string major, minor, patch;
  for (std::string line; std::getline(h, line);) {
    std::istringstream w(line);
    std::string define, key, value;
    w >> define >> key >> value;
    if (key == "HIP_VERSION_MAJOR") major = value;
    if (key == "HIP_VERSION_MINOR") minor = value;
    if (key == "HIP_VERSION_PATCH") patch = value;
  }
  return id + "; HIP " + (major.empty() ? "headers missing" : major + "." + minor + "." + patch);
}

// "gfx1151" -> "1151", the suffix of the device libraries' ISA-version file.
std::string isa_suffix(const std::string& arch) { return arch.rfind("gfx", 0) == 0 ? arch.substr(3) : arch; }

// __oclc_ISA_version as the device libraries number it: major*1000 +
// minor*10 + stepping, from the arch's last two (hex) digits.
int isa_version(const std::string& arch) {
  const std::string s = isa_suffix(arch);
  const bool ok = arch.rfind("gfx", 0) == 0 && s.size() >= 3 && s.size() <= 4 &&
                  s.find_first_not_of("0123456789abcdef") == std::string::npos &&
                  s.substr(0, s.size() - 2).find_first_not_of("0123456789") == std::string::npos;
  if (!ok) fail("E740", "'" + arch + "' is not an AMD GPU arch (gfx<major><minor><stepping>)");
  const int stepping = std::stoi(s.substr(s.size() - 1), nullptr, 16);
  const int minor = std::stoi(s.substr(s.size() - 2, 1), nullptr, 16);
  return std::stoi(s.substr(0, s.size() - 2)) * 1000 + minor * 10 + stepping;
}

// The directory holding oclc_isa_version_<suffix>.bc. Debian's ROCm 5.2
// libraries predate RDNA3 and have none for gfx11: that one-constant control
// library is then compiled here (OpenCL C, by the same clang) into the cache.
// The math libraries themselves (ocml, ockl) are Debian's, unchanged.
std::string isa_library_dir(const std::string& cc, const std::string& toolchain, const std::string& arch) {
  const std::string suffix = isa_suffix(arch), file = "oclc_isa_version_" + suffix + ".bc";
  if (fs::exists(fs::path(device_libs()) / file)) return device_libs();
  // Keyed by the compiler that wrote it, so an upgraded clang writes its own.
  const fs::path dir = fs::path(default_cache_root()) / "hip-isa" / sha256_hex(toolchain).substr(0, 16) / arch;
  if (fs::exists(dir / file)) return dir.string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("E740", "cannot create " + dir.string() + " for the ISA-version library: " + ec.message());
  const std::string tmp = (dir / (file + "." + std::to_string(::getpid()) + ".tmp")).string();
  const std::string cl = tmp + ".cl", log = tmp + ".log";
  std::ofstream(cl) << "const __constant int __oclc_ISA_version = " << isa_version(arch) << ";\n";
  const int rc = run_process({cc, "-x", "cl", "-Xclang", "-finclude-default-header", "-target", "amdgcn-amd-amdhsa",
                              "-mcpu=" + arch, "-nogpulib", "-O3", "-c", "-emit-llvm", "-o", tmp, cl},
                             log);
  const std::string why = rc == 0 ? "" : read_text_file(log).substr(0, 2000);
  fs::remove(cl, ec);
  fs::remove(log, ec);
  if (rc != 0) fail("E741", "cannot build the ISA-version library for " + arch + ":\n" + why);
  fs::rename(tmp, dir / file, ec);  // atomic: a concurrent build writes the same bytes
  if (ec) fail("E740", "cannot place the ISA-version library in " + dir.string() + ": " + ec.message());
  return dir.string();
}

// The bitcode libraries a kernel links, and the digest of their contents (a
// Debian upgrade of rocm-device-libs changes the code objects: a new key).
struct DeviceLibs {
  std::vector<std::string> flags;
  std::string digest;
};

// The device libraries linked into every kernel, named (not left to the
// driver's search, which refuses an arch whose ISA library is missing). The
// ABI-version library is v5's, the code object version clang-19 writes.
DeviceLibs device_libs_for(const std::string& cc, const std::string& toolchain, const std::string& arch, int64_t wave) {
  if (!fs::is_directory(device_libs()))
    fail("E740", "the ROCm device libraries are not at " + device_libs() +
                     " (apt-get install rocm-device-libs, or set TESSERA_ROCM_DEVICE_LIBS)");
  DeviceLibs out;
  out.flags = {"--hip-device-lib-path=" + device_libs()};
  const std::string isa_dir = isa_library_dir(cc, toolchain, arch);
  if (isa_dir != device_libs()) out.flags.push_back("--hip-device-lib-path=" + isa_dir);
  const std::vector<std::string> names = {"hip",
                                          "ocml",
                                          "ockl",
                                          "oclc_daz_opt_off",
                                          "oclc_unsafe_math_off",
                                          "oclc_finite_only_off",
                                          "oclc_correctly_rounded_sqrt_on",
                                          wave == 64 ? "oclc_wavefrontsize64_on" : "oclc_wavefrontsize64_off",
                                          "oclc_isa_version_" + isa_suffix(arch),
                                          "oclc_abi_version_500"};
  std::string contents;
  for (const std::string& lib : names) {
    out.flags.push_back("--hip-device-lib=" + lib + ".bc");
    const fs::path in_debian = fs::path(device_libs()) / (lib + ".bc");
    const fs::path path = fs::exists(in_debian) ? in_debian : fs::path(isa_dir) / (lib + ".bc");
    if (!fs::exists(path)) fail("E740", "the ROCm device library " + lib + ".bc is missing from " + device_libs());
    contents += lib + " " + sha256_hex(read_text_file(path.string())) + "\n";
  }
  out.digest = sha256_hex(contents);
  return out;
}

machine::Descriptor kernel_device(const ir::KernelDesc& k) {
  return k.device.empty() ? machine::default_profile(machine::Kind::Hip) : machine::parse(k.device);
}
// The compiler's identity and the libraries for one arch, found once a
// process: `clang --version` and the libraries' digests cost more than a
// compile the cache already holds.
struct Setup {
  std::string toolchain;
  DeviceLibs libs;
};
const Setup& setup_for(const std::string& cc, const std::string& arch, int64_t wave) {
  static std::mutex mutex;
  static std::map<std::string, Setup> found;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string key = cc + "\n" + device_libs() + "\n" + arch + "\n" + std::to_string(wave);
  if (auto it = found.find(key); it != found.end()) return it->second;
  Setup s;
  s.toolchain = toolchain_id(cc);
  if (s.toolchain.empty())
    fail("E740", "the HIP lane's compiler ('" + cc +
                     "') cannot be run: its compile check needs it (apt-get install clang-19, or set "
                     "TESSERA_HIP_CLANG)");
  s.libs = device_libs_for(cc, s.toolchain, arch, wave);
  return found.emplace(key, std::move(s)).first->second;
}
}  // namespace

std::string kernel_arch(const ir::KernelDesc& k) { return kernel_device(k).arch; }

CodeObject compile(const ir::KernelDesc& k) {
  if (sha256_hex(k.source) != k.sha256)
    fail("E701", "kernel @" + k.sym + " refused: its source does not match its recorded sha256 " + k.sha256);
  const machine::Descriptor device = kernel_device(k);
  const std::string cc = clang();
  CodeObject co;
  co.arch = device.arch;
  const Setup& setup = setup_for(cc, co.arch, device.simd_width);
  co.toolchain = setup.toolchain;
  const DeviceLibs& libs = setup.libs;
  static DiskCache disk(default_cache_root(), "hip");
  CacheStats stats;
  const nlohmann::json meta = {{"source_sha256", k.sha256},
                               {"toolchain", co.toolchain},
                               {"arch", co.arch},
                               {"flags", kFlags},
                               {"device_libs", libs.digest}};
  const std::string key = sha256_hex("tessera-hip-code-object-v2\n" + meta.dump());
  const EntrySpec spec = {meta, {"kernel.hip", "kernel.co", "compile.log"}, {{"kernel.hip", k.sha256}}};
  const std::string dir = disk.get(
      key, spec,
      [&](const std::string& tmp) {
        const std::string src = (fs::path(tmp) / "kernel.hip").string();
        std::ofstream(src, std::ios::binary) << k.source;
        std::vector<std::string> argv = {cc, "-x", "hip", "--offload-arch=" + co.arch, "--rocm-path=/usr"};
        argv.insert(argv.end(), libs.flags.begin(), libs.flags.end());
        for (auto& f : split_flags(kFlags)) argv.push_back(f);
        argv.insert(argv.end(), {"-o", (fs::path(tmp) / "kernel.co").string(), src});
        const std::string log = (fs::path(tmp) / "compile.log").string();
        if (run_process(argv, log) != 0)
          fail("E741",
               "clang rejected HIP kernel @" + k.sym + " for " + co.arch + ":\n" + read_text_file(log).substr(0, 4000));
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
