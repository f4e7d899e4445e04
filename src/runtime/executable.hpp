// A loaded Target IR func, ready to run many times. Loading verifies every
// kernel's digest and compiles/loads it once; run() only checks the shape
// guards, allocates outputs and launches. Every launch is recorded with where
// it ran: there is no path that runs something else and reports success.
#pragma once
#include <string>
#include <vector>

#include "ir/ir.hpp"
#include "ir/target_dialect.hpp"
#include "runtime/cpu_module_cache.hpp"
#include "runtime/tensor.hpp"

namespace tessera::runtime {

class ThreadPool;

struct LaunchRecord {
  std::string kernel;
  std::string placement;  // "native_cpu"
  std::string sha256;
  int64_t programs = 0;
  double kernel_wall_ns = 0;  // host clock around the native call only
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

  // Runs on `pool` (default: the process-wide pool). Results never depend on it.
  RunResult run(const std::vector<Tensor>& inputs, ThreadPool* pool = nullptr) const;

  const std::string& func_name() const { return func_; }
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<ir::Type>& input_types() const { return input_types_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  const std::vector<ir::Type>& output_types() const { return output_types_; }
  const std::vector<ir::KernelDesc>& kernels() const { return kernels_; }

 private:
  struct Step {
    size_t kernel;
    std::vector<int> buffers;  // value slots: inputs then outputs of the launch
  };
  std::string func_;
  std::vector<std::string> input_names_, output_names_;
  std::vector<ir::Type> input_types_, output_types_;
  std::vector<ir::KernelDesc> kernels_;
  std::vector<CpuKernelFn> fns_;
  std::vector<ir::Type> slot_types_;  // one per SSA value: args first
  std::vector<Step> steps_;
  std::vector<int> result_slots_;
};

}  // namespace tessera::runtime
