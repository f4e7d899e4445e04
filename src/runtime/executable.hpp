// A loaded Target IR func for the CPU, ready to run many times. Loading
// verifies every kernel's digest and compiles/loads it once; run() only checks
// the shape guards, allocates outputs and launches. Every launch is recorded
// with where it ran: there is no path that runs something else and reports
// success.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/ir.hpp"
#include "runtime/cpu_module_cache.hpp"
#include "runtime/host_schedule.hpp"
#include "runtime/tensor.hpp"

namespace tessera::runtime {

class ThreadPool;

struct LaunchRecord {
  std::string kernel;
  std::string placement;  // "native_cpu" | "native_gpu" | "emulated_msl" (Metal kernels run on the CPU under emulation)
  std::string sha256;
  int64_t programs = 0;
  double kernel_wall_ns = 0;    // host clock around the native submit (CPU: the kernel; GPU: the enqueue)
  double device_event_ns = -1;  // GPU events around the kernel; -1 where not measured
  // What ran: "tessera" (a synthesized kernel) or the library of a library
  // candidate with its version ("openblas 0.3.21", "cublaslt 130000").
  std::string implementation = "tessera";
};

struct RunResult {
  std::vector<Tensor> outputs;
  std::vector<LaunchRecord> launches;
};

class Executable {
 public:
  // `func` empty = the module's first func. Throws on digest mismatch (E701), etc.
  static Executable load(const ir::Module& target_ir, const std::string& func = "",
                         CpuModuleCache& cache = CpuModuleCache::global());

  // The Metal lane's host emulation: Target IR for "metal" (E712 otherwise);
  // each kernel's MSL, digest verified, runs on the CPU as emulated
  // threadgroups (runtime/metal/msl_emulation.hpp). Launches say emulated_msl.
  static Executable load_emulated_msl(const ir::Module& target_ir, const std::string& func = "",
                                      CpuModuleCache& cache = CpuModuleCache::global());

  // Runs on `pool` (default: the process-wide pool). Results never depend on it.
  RunResult run(const std::vector<Tensor>& inputs, ThreadPool* pool = nullptr) const;

  const HostSchedule& schedule() const { return h_; }
  const std::string& func_name() const { return h_.func; }
  const std::vector<std::string>& input_names() const { return h_.input_names; }
  const std::vector<ir::Type>& input_types() const { return h_.input_types; }
  const std::vector<std::string>& output_names() const { return h_.output_names; }
  const std::vector<ir::Type>& output_types() const { return h_.output_types; }
  const std::vector<ir::KernelDesc>& kernels() const { return h_.kernels; }

 private:
  HostSchedule h_;
  std::vector<CpuKernelFn> fns_;
  // Library kernels (KernelDesc::library): the call, and what it is.
  std::vector<std::function<void(void* const*)>> library_fns_;
  std::vector<std::string> implementations_;
  std::string placement_ = "native_cpu";
};

}  // namespace tessera::runtime
