// A loaded Target IR func, ready to run many times: one interface over every
// lane that executes here (the CPU, the Metal lane's host emulation, CUDA;
// src/targets/ says which loads what). Loading verifies every kernel's digest
// and compiles/loads it once; a run only checks the shape guards, makes the
// outputs and launches. Every launch is recorded with where it ran: there is
// no path that runs something else and reports success.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.hpp"
#include "runtime/host_schedule.hpp"
#include "runtime/tensor.hpp"

namespace tessera::runtime {

class Executable;
class ThreadPool;

// How a benchmark's launch is clocked. each_kernel: the lane's clocks around
// every kernel (a device lane then launches them one by one, so a kernel
// shorter than a host launch waits for the next one inside its events).
// whole_run: one pair of device events around the whole run as it normally
// goes (one CUDA graph), in the first record's device_span_ns.
enum class Timing { none, each_kernel, whole_run };

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
  bool graph = false;  // launched inside one CUDA graph with the run's other kernels
  // The run's first record only, after a whole_run launch: GPU events around
  // the run, the gaps between its kernels included; -1 elsewhere.
  double device_span_ns = -1;
};

struct RunResult {
  std::vector<Tensor> outputs;
  std::vector<LaunchRecord> launches;
  // Every value slot on the host (HostSchedule: the inputs, then each launch's
  // results), when the run was asked to keep them: what each kernel received
  // and produced, for a per-kernel check.
  std::vector<Tensor> values;
};

// One run's buffers, bound once and launched many times (what benchmarks
// time). Each executable makes its own kind and takes only those it made
// (E614 otherwise).
struct Binding {
  explicit Binding(const Executable* owner) : owner(owner) {}
  virtual ~Binding() = default;
  const Executable* owner;
};

class Executable {
 public:
  virtual ~Executable() = default;

  // Inputs in, results back on the host, every launch recorded. `pool`: the
  // host threads a CPU lane runs on (default: the process-wide pool; results
  // never depend on it); a device lane ignores it.
  // `keep_values` fills RunResult::values (a device lane downloads them all).
  RunResult run(const std::vector<Tensor>& inputs, ThreadPool* pool = nullptr, bool keep_values = false) const {
    return run_on(inputs, pool, keep_values);
  }

  // The split a benchmark times. bind() checks the inputs (E610/E611) and
  // makes the run's buffers (a device lane uploads the inputs); launch()
  // starts every kernel, clocked as `timing` says;
  // finish() waits and returns one record per launch; outputs() reads the
  // results of the last finished launch back to the host.
  virtual std::unique_ptr<Binding> bind(const std::vector<Tensor>& inputs) const = 0;
  virtual void launch(Binding& b, Timing timing) const = 0;
  virtual std::vector<LaunchRecord> finish(Binding& b) const = 0;
  virtual std::vector<Tensor> outputs(const Binding& b) const = 0;

  const HostSchedule& schedule() const { return h_; }
  const std::string& func_name() const { return h_.func; }
  const std::vector<std::string>& input_names() const { return h_.input_names; }
  const std::vector<ir::Type>& input_types() const { return h_.input_types; }
  const std::vector<std::string>& output_names() const { return h_.output_names; }
  const std::vector<ir::Type>& output_types() const { return h_.output_types; }
  const std::vector<ir::KernelDesc>& kernels() const { return h_.kernels; }

 protected:
  Executable() = default;
  Executable(const Executable&) = default;
  Executable(Executable&&) = default;
  Executable& operator=(const Executable&) = default;
  Executable& operator=(Executable&&) = default;

  virtual RunResult run_on(const std::vector<Tensor>& inputs, ThreadPool* pool, bool keep_values) const = 0;

  // `b` as the binding kind B this executable makes; E614 if another made it.
  template <class B>
  B& own(Binding& b) const {
    check_owner(b);
    return static_cast<B&>(b);
  }
  template <class B>
  const B& own(const Binding& b) const {
    check_owner(b);
    return static_cast<const B&>(b);
  }
  // E610/E611 unless `inputs` match the func's inputs (E611 also for a tensor without storage).
  void check_inputs(const std::vector<Tensor>& inputs) const;

  HostSchedule h_;

 private:
  void check_owner(const Binding& b) const;
};

}  // namespace tessera::runtime
