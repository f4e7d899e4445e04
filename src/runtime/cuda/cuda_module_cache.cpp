#include "runtime/cuda/cuda_module_cache.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "support/sha256.hpp"

namespace tessera::runtime::cuda {

namespace fs = std::filesystem;

namespace {
// No fast-math: max/min must see NaN, and sums must round as written.
const std::vector<std::string> kOptions = {"-std=c++17", "--fmad=false", "-default-device"};
}  // namespace

std::string nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                          std::string* log_out) {
  const NvrtcApi& nv = nvrtc();
  nvrtcProgram prog;
  if (nv.nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    fail("E733", "nvrtcCreateProgram failed for @" + name);
  std::vector<std::string> opts = kOptions;
  opts.push_back("--gpu-architecture=" + arch);
  std::vector<const char*> argv;
  for (auto& o : opts) argv.push_back(o.c_str());
  nvrtcResult r = nv.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  nv.nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nv.nvrtcGetProgramLog(prog, log.data());
  if (log_out) *log_out = log;
  if (r != NVRTC_SUCCESS) {
    nv.nvrtcDestroyProgram(&prog);
    fail("E733", "NVRTC failed on kernel @" + name + ": " + nv.nvrtcGetErrorString(r) + "\n" + log.substr(0, 4000));
  }
  size_t size = 0;
  nv.nvrtcGetCUBINSize(prog, &size);
  std::string cubin(size, '\0');
  nv.nvrtcGetCUBIN(prog, cubin.data());
  nv.nvrtcDestroyProgram(&prog);
  return cubin;
}

CudaModuleCache::CudaModuleCache(std::string dir) : disk_(dir, "cuda") {
  const DeviceInfo& d = device_info();
  // Hopper's arch-specific target (wgmma etc.) where the device is sm_90.
  arch_ = d.arch() + (d.sm_major == 9 && d.sm_minor == 0 ? "a" : "");
  nvrtc().nvrtcVersion(&nvrtc_major_, &nvrtc_minor_);
  for (auto& o : kOptions) options_ += o + " ";
}

CudaModuleCache& CudaModuleCache::global() {
  static CudaModuleCache cache(default_cache_root());
  return cache;
}

std::string CudaModuleCache::toolchain() const {
  return "nvrtc " + std::to_string(nvrtc_major_) + "." + std::to_string(nvrtc_minor_) + " " + arch_;
}

CUfunction CudaModuleCache::load(const ir::KernelDesc& k) {
  if (sha256_hex(k.source) != k.sha256)
    fail("E701", "kernel @" + k.sym + " refused: its source does not match its recorded sha256 " + k.sha256);
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = sha256_hex("tessera-cuda-module-v1\n" + k.sha256 + "\n" + toolchain() + "\n" + options_);
  CUmodule module = nullptr;
  if (auto it = loaded_.find(key); it != loaded_.end()) {
    module = it->second;
    ++stats_.hits;
  } else {
    const EntrySpec spec = {{{"source_sha256", k.sha256}, {"toolchain", toolchain()}, {"options", options_}},
                            {"kernel.cu", "compile.log", "kernel.cubin"},
                            {{"kernel.cu", k.sha256}}};
    // The cubin is read once, checked against the digest recorded when it
    // was built, and loaded from those very bytes.
    auto load_module = [&](const std::string& dir, const nlohmann::json& files) {
      const std::string image = verified_bytes((fs::path(dir) / "kernel.cubin").string(),
                                               files.at("kernel.cubin").get<std::string>());
      check(driver().cuModuleLoadData(&module, image.data()), "cuModuleLoadData");
    };
    disk_.get(
        key, spec,
        [&](const std::string& tmp) {
          std::ofstream(fs::path(tmp) / "kernel.cu", std::ios::binary) << k.source;
          std::string log;
          std::string cubin = nvrtc_compile(k.source, k.sym, arch_, &log);
          std::ofstream(fs::path(tmp) / "compile.log") << log;
          std::ofstream(fs::path(tmp) / "kernel.cubin", std::ios::binary) << cubin;
        },
        stats_, load_module);
    loaded_[key] = module;
  }
  CUfunction fn = nullptr;
  check(driver().cuModuleGetFunction(&fn, module, k.entry.c_str()), "cuModuleGetFunction");
  // Above 48 KiB of dynamic shared memory a kernel must opt in.
  if (k.shared_bytes > 48 * 1024)
    check(driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                      static_cast<int>(k.shared_bytes)),
          "cuFuncSetAttribute(max dynamic shared memory)");
  // Clusters of more than 8 blocks (the portable limit) must opt in too; a
  // device that cannot place them fails the launch, never runs another shape.
  if (k.cluster > 8)
    check(driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
          "cuFuncSetAttribute(non-portable cluster size)");
  return fn;
}

}  // namespace tessera::runtime::cuda
