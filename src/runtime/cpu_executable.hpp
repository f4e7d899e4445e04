// The Executable of the CPU lane (native_cpu) and of the Metal lane's host
// emulation (emulated_msl): kernels are host functions run on a thread pool,
// tensors live in host memory.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "runtime/cpu_module_cache.hpp"
#include "runtime/executable.hpp"

namespace tessera::runtime {

class CpuExecutable final : public Executable {
 public:
  // `func` empty = the module's first func. Throws on digest mismatch (E701), etc.
  static CpuExecutable load(const ir::Module& target_ir, const std::string& func = "",
                            CpuModuleCache& cache = CpuModuleCache::global());

  // The Metal lane's host emulation: Target IR for "metal" (E712 otherwise);
  // each kernel's MSL, digest verified, runs on the CPU as emulated
  // threadgroups (runtime/metal/msl_emulation.hpp). Launches say emulated_msl.
  static CpuExecutable load_emulated_msl(const ir::Module& target_ir, const std::string& func = "",
                                         CpuModuleCache& cache = CpuModuleCache::global());

  // bind() keeps the inputs; each launch() is one whole run (outputs made
  // anew, as run() makes them), so a timed launch costs what a run costs;
  // `timing` changes nothing, the host clock brackets every kernel anyway.
  std::unique_ptr<Binding> bind(const std::vector<Tensor>& inputs) const override;
  void launch(Binding& b, Timing timing) const override;
  std::vector<LaunchRecord> finish(Binding& b) const override;
  std::vector<Tensor> outputs(const Binding& b) const override;

 private:
  CpuExecutable() = default;
  RunResult run_on(const std::vector<Tensor>& inputs, ThreadPool* pool, bool keep_values) const override;

  std::vector<CpuKernelFn> fns_;
  // Library kernels (KernelDesc::library): the call, and what it is.
  std::vector<std::function<void(void* const*)>> library_fns_;
  std::vector<std::string> implementations_;
  std::string placement_ = "native_cpu";
};

}  // namespace tessera::runtime
