#include "runtime/cpu_executable.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>

#include "runtime/compile_progress.hpp"
#include "runtime/library/openblas.hpp"
#include "runtime/metal/msl_emulation.hpp"
#include "runtime/thread_pool.hpp"

namespace tessera::runtime {

namespace {

// Every kernel of `descs` through `cache`, compiled in parallel (kernels are
// independent), one thread per hardware thread; results in kernel order. The
// first kernel (in order) that fails throws, after every thread has stopped.
std::vector<CpuKernelFn> load_all(const std::vector<ir::KernelDesc>& descs, CpuModuleCache& cache) {
  std::vector<CpuKernelFn> fns(descs.size(), nullptr);
  std::vector<std::exception_ptr> errors(descs.size());
  CompileProgress progress(static_cast<int64_t>(descs.size()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < descs.size();) {
      try {
        bool compiled = false;
        fns[i] = cache.load(descs[i], &compiled);
        progress.ready(compiled);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), descs.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return fns;
}

struct HostBinding : Binding {
  using Binding::Binding;
  std::vector<Tensor> inputs;
  RunResult last;  // of the last launch
};

}  // namespace

CpuExecutable CpuExecutable::load(const ir::Module& m, const std::string& func, CpuModuleCache& cache) {
  CpuExecutable e;
  e.h_ = HostSchedule::from(m, func, "cpu");
  std::vector<ir::KernelDesc> compiled;
  for (const ir::KernelDesc& k : e.h_.kernels)
    if (k.library.empty()) compiled.push_back(k);
  const std::vector<CpuKernelFn> fns = load_all(compiled, cache);  // digests verified here, once
  size_t next = 0;
  for (const ir::KernelDesc& k : e.h_.kernels) {
    if (k.library.empty()) {
      e.fns_.push_back(fns[next++]);
      e.library_fns_.emplace_back();
      e.implementations_.push_back("tessera");
      continue;
    }
    e.fns_.push_back(nullptr);
    e.library_fns_.push_back(openblas_matmul(ir::load_library_call(k, "openblas")));
    e.implementations_.push_back("openblas " + openblas_version());
  }
  return e;
}

CpuExecutable CpuExecutable::load_emulated_msl(const ir::Module& m, const std::string& func, CpuModuleCache& cache) {
  CpuExecutable e;
  e.h_ = HostSchedule::from(m, func, "metal");
  std::vector<ir::KernelDesc> emulated;
  for (const ir::KernelDesc& k : e.h_.kernels) {
    if (!k.library.empty()) fail("E712", "kernel @" + k.sym + " is a library call; the MSL emulation runs MSL kernels");
    emulated.push_back(metal::emulated_host_kernel(k));
  }
  e.fns_ = load_all(emulated, cache);
  e.library_fns_.resize(e.fns_.size());
  e.implementations_.assign(e.fns_.size(), "tessera");
  e.placement_ = "emulated_msl";
  return e;
}

RunResult CpuExecutable::run_on(const std::vector<Tensor>& inputs, ThreadPool* on, bool keep_values) const {
  check_inputs(inputs);
  std::vector<Tensor> slots(h_.slot_types.size());
  for (size_t i = 0; i < inputs.size(); ++i) slots[i] = inputs[i];
  for (size_t i = inputs.size(); i < slots.size(); ++i) {   // launch results and intermediates
    const int into = h_.written_into(static_cast<int>(i));  // in place: the input's storage
    slots[i] = into >= 0 ? inputs[into] : Tensor::empty(h_.slot_types[i].dtype, h_.slot_types[i].shape);
  }
  RunResult result;
  // Kept values show each kernel's inputs as it received them: an input a
  // result overwrites (in place) is kept as it was before the run.
  std::vector<std::pair<int, Tensor>> before;
  if (keep_values)
    for (int into : h_.output_into)
      if (into >= 0) {
        Tensor copy = Tensor::empty(inputs[into].dtype(), inputs[into].shape());
        if (copy.nbytes()) std::memcpy(copy.data(), inputs[into].data(), copy.nbytes());
        before.emplace_back(into, std::move(copy));
      }
  ThreadPool& pool = on ? *on : ThreadPool::global();
  for (const HostSchedule::Step& s : h_.steps) {
    const ir::KernelDesc& k = h_.kernels[s.kernel];
    std::vector<void*> buffers;
    for (size_t b = 0; b < s.buffers.size(); ++b) {
      Tensor& t = slots[s.buffers[b]];
      if (t.numel() != k.buffers[b].elements || t.dtype() != k.buffers[b].dtype)  // launch guard
        fail("E612", "buffer '" + k.buffers[b].str() + "' of @" + k.sym + " got " + t.type_string());
      buffers.push_back(t.data());
    }
    CpuKernelFn fn = fns_[s.kernel];
    void* const* args = buffers.data();
    auto t0 = std::chrono::steady_clock::now();
    if (fn) pool.parallel_for(k.grid, [fn, args](int64_t b, int64_t e) { fn(args, b, e); });
    else library_fns_[s.kernel](args);  // the library threads itself
    auto t1 = std::chrono::steady_clock::now();
    result.launches.push_back({k.sym, placement_, k.sha256, k.grid,
                               std::chrono::duration<double, std::nano>(t1 - t0).count(), -1,
                               implementations_[s.kernel]});
  }
  h_.check_guards([&](size_t g) { return static_cast<float>(slots[h_.guard_slots[g]].get(0)); });
  for (int r : h_.result_slots) result.outputs.push_back(slots[r]);
  if (keep_values) {
    result.values = std::move(slots);
    for (auto& [slot, t] : before) result.values[slot] = std::move(t);
  }
  return result;
}

std::unique_ptr<Binding> CpuExecutable::bind(const std::vector<Tensor>& inputs) const {
  check_inputs(inputs);
  auto b = std::make_unique<HostBinding>(this);
  b->inputs = inputs;
  return b;
}

void CpuExecutable::launch(Binding& b, Timing) const {
  HostBinding& hb = own<HostBinding>(b);
  hb.last = run_on(hb.inputs, nullptr, false);
}

std::vector<LaunchRecord> CpuExecutable::finish(Binding& b) const { return own<HostBinding>(b).last.launches; }

std::vector<Tensor> CpuExecutable::outputs(const Binding& b) const { return own<HostBinding>(b).last.outputs; }

}  // namespace tessera::runtime
