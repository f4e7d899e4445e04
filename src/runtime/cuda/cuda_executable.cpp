#include "runtime/cuda/cuda_executable.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "runtime/cuda/tensor_map.hpp"
#include "support/sha256.hpp"

namespace tessera::runtime::cuda {

size_t DeviceTensor::nbytes() const {
  size_t n = dtype_size(dtype_);
  for (int64_t d : shape_) n *= static_cast<size_t>(d);
  return n;
}

DeviceTensor DeviceTensor::empty(DType dtype, std::vector<int64_t> shape) {
  DeviceTensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  const DriverApi& cu = driver();
  CUdeviceptr p = 0;
  if (t.nbytes() > 0) check(cu.cuMemAlloc(&p, t.nbytes()), "cuMemAlloc");
  t.mem_ = std::shared_ptr<CUdeviceptr>(new CUdeviceptr(p), [](CUdeviceptr* q) {
    if (*q) driver().cuMemFree(*q);
    delete q;
  });
  return t;
}

DeviceTensor DeviceTensor::empty_on(DType dtype, std::vector<int64_t> shape, CUstream stream) {
  DeviceTensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  const DriverApi& cu = driver();
  CUdeviceptr p = 0;
  if (t.nbytes() > 0) check(cu.cuMemAllocAsync(&p, t.nbytes(), stream), "cuMemAllocAsync");
  t.mem_ = std::shared_ptr<CUdeviceptr>(new CUdeviceptr(p), [stream](CUdeviceptr* q) {
    if (*q) driver().cuMemFreeAsync(*q, stream);
    delete q;
  });
  return t;
}

DeviceTensor DeviceTensor::borrow(DType dtype, std::vector<int64_t> shape, CUdeviceptr ptr,
                                  std::shared_ptr<void> owner) {
  DeviceTensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  if (t.nbytes() > 0 && (!ptr || ptr % dtype_size(dtype) != 0))
    fail("E603", "borrowed device " + ir::Type::tensor(dtype, t.shape_).str() + " is not aligned to its " +
                     std::to_string(dtype_size(dtype)) + "-byte elements");
  // The deleter holds `owner`: the caller's memory lives while any copy does.
  t.mem_ = std::shared_ptr<CUdeviceptr>(new CUdeviceptr(ptr), [owner = std::move(owner)](CUdeviceptr* q) { delete q; });
  return t;
}

DeviceTensor DeviceTensor::upload(const Tensor& host, CUstream stream) {
  DeviceTensor t = empty(host.dtype(), host.shape());
  if (t.nbytes() > 0) {
    check(driver().cuMemcpyHtoDAsync(t.ptr(), host.data(), t.nbytes(), stream), "cuMemcpyHtoDAsync");
    check(driver().cuStreamSynchronize(stream), "cuStreamSynchronize");  // the host buffer may go away
  }
  return t;
}

Tensor DeviceTensor::download(CUstream stream) const {
  Tensor host = Tensor::empty(dtype_, shape_);
  if (nbytes() > 0) {
    check(driver().cuMemcpyDtoHAsync(host.data(), ptr(), nbytes(), stream), "cuMemcpyDtoHAsync");
    check(driver().cuStreamSynchronize(stream), "cuStreamSynchronize");
  }
  return host;
}

// One run's device buffers and kernel argument arrays, and the CUDA graph of
// its launches.
struct CudaExecutable::DeviceBinding : Binding {
  using Binding::Binding;
  std::vector<DeviceTensor> slots;             // what the binding owns (run_device: the graph's intermediates)
  std::vector<CUdeviceptr> ptrs;               // per slot
  std::vector<std::vector<void*>> params;      // per step: pointers into ptrs, then into maps
  std::vector<std::vector<CUtensorMap>> maps;  // per step, encoded from ptrs; the driver copies them
  // Per step: its kernel's workspace (zeroed when made; empty where it keeps none).
  std::vector<DeviceTensor> workspaces;
  std::vector<CUdeviceptr> workspace_ptrs;  // params point into it
  std::shared_ptr<CUgraphExec_st> graph;
  // run_device's graph: the template the nodes are handles into (updating a
  // node of the instantiated graph names it), and one node per step (null:
  // nothing launches).
  std::shared_ptr<CUgraph_st> graph_template;
  std::vector<CUgraphNode> nodes;
};

// run_device's state: one binding whose caller buffers change from call to call.
struct CudaExecutable::DeviceRuns {
  std::mutex mu;
  DeviceBinding binding;
  bool as_graph = false;             // kernels to launch, none from a library
  std::vector<CUdeviceptr> applied;  // per slot: the pointer the kernels' arguments hold
  std::vector<int>
      per_call_slots;  // allocated on the caller's stream each call: results (and, without a graph, intermediates)
  explicit DeviceRuns(const CudaExecutable* owner) : binding(owner) {}
};

namespace {

// A persistent kernel's launch: as many programs (clusters) as the device
// holds at once, at most the grid its schedule asked for (the programs
// stride over the work, so any count is correct; more than fit would run in
// a second wave and double the time). None fitting is an error, not a
// smaller shape.
int64_t persistent_grid(const ir::KernelDesc& k, CUfunction fn) {
  CUlaunchConfig cfg{};
  cfg.gridDimX = static_cast<unsigned>(k.grid);
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = static_cast<unsigned>(k.threads);
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = static_cast<unsigned>(k.shared_bytes);
  int clusters = 0;
  check(driver().cuOccupancyMaxActiveClusters(&clusters, fn, &cfg), "cuOccupancyMaxActiveClusters");
  if (clusters < 1)
    fail("E734", "kernel @" + k.sym + ": no cluster of " + std::to_string(k.cluster) + " blocks of " +
                     std::to_string(k.threads) + " threads and " + std::to_string(k.shared_bytes) +
                     " bytes of shared memory fits this device");
  return std::min<int64_t>(k.grid, int64_t{clusters} * k.cluster);
}

}  // namespace

CudaExecutable CudaExecutable::load(const ir::Module& m, const std::string& func, CudaModuleCache& cache) {
  CudaExecutable e;
  e.h_ = HostSchedule::from(m, func, "cuda");
  for (ir::KernelDesc& k : e.h_.kernels) {
    if (k.library.empty()) {
      e.fns_.push_back(cache.load(k));                                             // digest verified here, once
      if (k.persistent && k.grid > 0) k.grid = persistent_grid(k, e.fns_.back());  // 0 rows: nothing to launch
      e.libraries_.emplace_back();
      e.implementations_.push_back("tessera");
      continue;
    }
    e.fns_.push_back(nullptr);
    e.libraries_.push_back(std::make_shared<CublasLtMatmul>(ir::load_library_call(k, "cublaslt")));
    e.implementations_.push_back(cublaslt_version());
  }
  const DriverApi& cu = driver();
  check(cu.cuStreamCreate(&e.stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  e.events_.resize(2 * e.h_.steps.size() + 2);
  for (CUevent& ev : e.events_) check(cu.cuEventCreate(&ev, CU_EVENT_DEFAULT), "cuEventCreate");
  size_t launching = 0;
  bool library = false;
  for (const HostSchedule::Step& s : e.h_.steps) {
    launching += e.h_.kernels[s.kernel].grid > 0;
    library |= e.libraries_[s.kernel] != nullptr;
  }
  e.device_->as_graph = launching > 0 && !library;
  for (const HostSchedule::Step& s : e.h_.steps) {
    const ir::KernelDesc& k = e.h_.kernels[s.kernel];
    e.device_launches_.push_back(
        {k.sym, "native_gpu", k.sha256, k.grid, -1, -1, e.implementations_[s.kernel], e.device_->as_graph});
  }
  const size_t inputs = e.h_.input_types.size();
  for (size_t slot = inputs; slot < e.h_.slot_types.size(); ++slot) {
    const bool result = std::count(e.h_.result_slots.begin(), e.h_.result_slots.end(), static_cast<int>(slot)) > 0;
    if (e.h_.written_into(static_cast<int>(slot)) >= 0) continue;  // each call's input (run_device)
    if (result || !e.device_->as_graph) e.device_->per_call_slots.push_back(static_cast<int>(slot));
  }
  return e;
}

CudaExecutable::CudaExecutable() : device_(std::make_unique<DeviceRuns>(this)) {}

CudaExecutable::CudaExecutable(CudaExecutable&& o) noexcept
    : Executable(std::move(o)),
      fns_(std::move(o.fns_)),
      libraries_(std::move(o.libraries_)),
      implementations_(std::move(o.implementations_)),
      stream_(o.stream_),
      events_(std::move(o.events_)),
      timing_(o.timing_),
      device_launches_(std::move(o.device_launches_)),
      device_(std::move(o.device_)) {
  if (device_) device_->binding.owner = this;
  o.stream_ = nullptr;
  o.events_.clear();
}

CudaExecutable::~CudaExecutable() {
  for (CUevent ev : events_) driver().cuEventDestroy(ev);
}

std::unique_ptr<Binding> CudaExecutable::bind(const std::vector<Tensor>& inputs) const {
  check_inputs(inputs);  // before any upload
  auto owned = std::make_unique<DeviceBinding>(this);
  DeviceBinding& b = *owned;
  b.slots.resize(h_.slot_types.size());
  for (size_t i = 0; i < inputs.size(); ++i) b.slots[i] = DeviceTensor::upload(inputs[i], stream_);
  for (size_t i = inputs.size(); i < b.slots.size(); ++i) {
    const int into = h_.written_into(static_cast<int>(i));  // in place: the uploaded input
    b.slots[i] = into >= 0 ? b.slots[into] : DeviceTensor::empty(h_.slot_types[i].dtype, h_.slot_types[i].shape);
  }
  for (const DeviceTensor& t : b.slots) b.ptrs.push_back(t.ptr());
  make_workspaces(b, stream_);
  set_params(b);
  const DriverApi& cu = driver();
  check(cu.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  launch_each(b, false, stream_);
  CUgraph graph = nullptr;
  check(cu.cuStreamEndCapture(stream_, &graph), "cuStreamEndCapture");
  CUgraphExec exec = nullptr;
  CUresult r = cu.cuGraphInstantiate(&exec, graph, 0);
  cu.cuGraphDestroy(graph);
  check(r, "cuGraphInstantiate");
  b.graph = std::shared_ptr<CUgraphExec_st>(exec, [](CUgraphExec e) { driver().cuGraphExecDestroy(e); });
  return owned;
}

void CudaExecutable::set_params(DeviceBinding& b) const {
  b.params.assign(h_.steps.size(), {});
  b.maps.assign(h_.steps.size(), {});
  for (size_t i = 0; i < h_.steps.size(); ++i) {
    const HostSchedule::Step& s = h_.steps[i];
    const ir::KernelDesc& k = h_.kernels[s.kernel];
    for (size_t j = 0; j < s.buffers.size(); ++j) {
      const ir::Type& t = h_.slot_types[s.buffers[j]];
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      if (n != k.buffers[j].elements || t.dtype != k.buffers[j].dtype)  // launch guard, checked once
        fail("E612", "buffer '" + k.buffers[j].str() + "' of @" + k.sym + " got " + t.str());
      b.params[i].push_back(&b.ptrs[s.buffers[j]]);
    }
    b.maps[i].resize(k.tensor_maps.size());                      // never resized again: params point into it
    for (CUtensorMap& m : b.maps[i]) b.params[i].push_back(&m);  // after the buffers (Target IR checked the order)
    if (k.workspace_bytes > 0) b.params[i].push_back(&b.workspace_ptrs.at(i));  // after the maps
    encode_maps(b, i);
  }
}

void CudaExecutable::make_workspaces(DeviceBinding& b, CUstream stream) const {
  b.workspaces.resize(h_.steps.size());
  b.workspace_ptrs.resize(h_.steps.size());  // (sized once: params point into it)
  for (size_t i = 0; i < h_.steps.size(); ++i) {
    const int64_t bytes = h_.kernels[h_.steps[i].kernel].workspace_bytes;
    if (bytes == 0) continue;
    b.workspaces[i] = DeviceTensor::empty_on(DType::I32, {(bytes + 3) / 4}, stream);
    b.workspace_ptrs[i] = b.workspaces[i].ptr();
    check(driver().cuMemsetD8Async(b.workspace_ptrs[i], 0, static_cast<size_t>(bytes), stream), "cuMemsetD8Async");
  }
}

void CudaExecutable::encode_maps(DeviceBinding& b, size_t step) const {
  const HostSchedule::Step& s = h_.steps[step];
  const ir::KernelDesc& k = h_.kernels[s.kernel];
  for (size_t m = 0; m < k.tensor_maps.size(); ++m) {
    size_t j = 0;
    while (k.buffers[j].name != k.tensor_maps[m].buffer) ++j;  // read_kernel_desc checked that it names one
    b.maps[step][m] = encode_tensor_map(k.tensor_maps[m], b.ptrs[s.buffers[j]]);
  }
}

void CudaExecutable::launch(Binding& binding, Timing timing) const {
  const DeviceBinding& b = own<DeviceBinding>(binding);
  const DriverApi& cu = driver();
  timing_ = timing;
  if (timing == Timing::each_kernel) {
    launch_each(b, true, stream_);
    return;
  }
  if (timing == Timing::none) {  // the plain path: one graph launch, nothing else
    check(cu.cuGraphLaunch(b.graph.get(), stream_), "cuGraphLaunch");
    return;
  }
  const size_t span = 2 * h_.steps.size();
  const auto t0 = std::chrono::steady_clock::now();
  check(cu.cuEventRecord(events_[span], stream_), "cuEventRecord");
  check(cu.cuGraphLaunch(b.graph.get(), stream_), "cuGraphLaunch");
  check(cu.cuEventRecord(events_[span + 1], stream_), "cuEventRecord");
  enqueue_ns_.assign(1, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
}

void CudaExecutable::launch_each(const DeviceBinding& b, bool timed, CUstream stream) const {
  const DriverApi& cu = driver();
  if (timed) enqueue_ns_.assign(h_.steps.size(), 0);
  for (size_t i = 0; i < h_.steps.size(); ++i) {
    const ir::KernelDesc& k = h_.kernels[h_.steps[i].kernel];
    if (k.grid == 0) continue;
    auto t0 = std::chrono::steady_clock::now();
    if (timed) check(cu.cuEventRecord(events_[2 * i], stream), "cuEventRecord");
    if (const auto& lib = libraries_[h_.steps[i].kernel]) lib->enqueue(b.params[i].data(), stream);
    else
      check(cu.cuLaunchKernel(fns_[h_.steps[i].kernel], static_cast<unsigned>(k.grid), 1, 1,
                              static_cast<unsigned>(k.threads), 1, 1, static_cast<unsigned>(k.shared_bytes), stream,
                              const_cast<void**>(b.params[i].data()), nullptr),
            "cuLaunchKernel");
    if (timed) {
      check(cu.cuEventRecord(events_[2 * i + 1], stream), "cuEventRecord");
      enqueue_ns_[i] = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    }
  }
}

std::vector<LaunchRecord> CudaExecutable::finish(Binding& b) const {
  own<DeviceBinding>(b);
  const DriverApi& cu = driver();
  check(cu.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  std::vector<LaunchRecord> out;
  for (size_t i = 0; i < h_.steps.size(); ++i) {
    const ir::KernelDesc& k = h_.kernels[h_.steps[i].kernel];
    LaunchRecord r{k.sym, "native_gpu", k.sha256, k.grid, -1, -1, implementations_[h_.steps[i].kernel]};
    r.graph = timing_ != Timing::each_kernel;
    if (timing_ == Timing::each_kernel && k.grid > 0) {
      r.kernel_wall_ns = enqueue_ns_[i];
      float ms = 0;
      check(cu.cuEventElapsedTime(&ms, events_[2 * i], events_[2 * i + 1]), "cuEventElapsedTime");
      r.device_event_ns = ms * 1e6;
    }
    out.push_back(r);
  }
  if (timing_ == Timing::whole_run && !out.empty()) {
    const size_t span = 2 * h_.steps.size();
    float ms = 0;
    check(cu.cuEventElapsedTime(&ms, events_[span], events_[span + 1]), "cuEventElapsedTime");
    out.front().device_span_ns = ms * 1e6;
    out.front().kernel_wall_ns = enqueue_ns_[0];
  }
  const DeviceBinding& db = own<DeviceBinding>(b);
  h_.check_guards([&](size_t g) { return static_cast<float>(db.slots[h_.guard_slots[g]].download(stream_).get(0)); });
  return out;
}

std::vector<Tensor> CudaExecutable::outputs(const Binding& binding) const {
  const DeviceBinding& b = own<DeviceBinding>(binding);
  std::vector<Tensor> out;
  for (int s : h_.result_slots) out.push_back(b.slots[s].download(stream_));
  return out;
}

CUDA_KERNEL_NODE_PARAMS CudaExecutable::node_params(const DeviceBinding& b, size_t step) const {
  const ir::KernelDesc& k = h_.kernels[h_.steps[step].kernel];
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = fns_[h_.steps[step].kernel];
  p.gridDimX = static_cast<unsigned>(k.grid);
  p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = static_cast<unsigned>(k.threads);
  p.blockDimY = p.blockDimZ = 1;
  p.sharedMemBytes = static_cast<unsigned>(k.shared_bytes);
  p.kernelParams = const_cast<void**>(b.params[step].data());
  return p;
}

// The launches as a chain of kernel nodes (the order of the steps), so each
// node's arguments can be replaced in the instantiated graph.
void CudaExecutable::build_graph(DeviceRuns& d) const {
  const DriverApi& cu = driver();
  DeviceBinding& b = d.binding;
  CUgraph graph = nullptr;
  check(cu.cuGraphCreate(&graph, 0), "cuGraphCreate");
  b.graph_template = std::shared_ptr<CUgraph_st>(graph, [](CUgraph g) { driver().cuGraphDestroy(g); });
  b.nodes.assign(h_.steps.size(), nullptr);
  CUgraphNode last = nullptr;
  for (size_t i = 0; i < h_.steps.size(); ++i) {
    if (h_.kernels[h_.steps[i].kernel].grid == 0) continue;
    const CUDA_KERNEL_NODE_PARAMS p = node_params(b, i);
    check(cu.cuGraphAddKernelNode(&b.nodes[i], graph, last ? &last : nullptr, last ? 1 : 0, &p),
          "cuGraphAddKernelNode");
    last = b.nodes[i];
  }
  CUgraphExec exec = nullptr;
  check(cu.cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  b.graph = std::shared_ptr<CUgraphExec_st>(exec, [](CUgraphExec e) { driver().cuGraphExecDestroy(e); });
}

std::vector<DeviceTensor> CudaExecutable::run_device(const std::vector<DeviceTensor>& inputs, CUstream stream) const {
  h_.check_inputs(inputs);
  DeviceRuns& d = *device_;
  std::lock_guard<std::mutex> lock(d.mu);
  DeviceBinding& b = d.binding;
  std::vector<DeviceTensor> fresh(h_.slot_types.size());  // this call's allocations
  const bool first = b.params.empty();
  if (first) {
    b.ptrs.assign(h_.slot_types.size(), 0);
    d.applied.assign(h_.slot_types.size(), 0);
    b.slots.resize(h_.slot_types.size());
    if (d.as_graph)  // the intermediates, once
      for (size_t s = inputs.size(); s < b.slots.size(); ++s)
        if (std::find(d.per_call_slots.begin(), d.per_call_slots.end(), static_cast<int>(s)) ==
                d.per_call_slots.end() &&
            h_.written_into(static_cast<int>(s)) < 0)
          b.ptrs[s] = (b.slots[s] = DeviceTensor::empty(h_.slot_types[s].dtype, h_.slot_types[s].shape)).ptr();
  }
  for (size_t s = 0; s < inputs.size(); ++s) b.ptrs[s] = inputs[s].ptr();
  for (size_t s = inputs.size(); s < b.ptrs.size(); ++s)  // in place: the caller's input
    if (const int into = h_.written_into(static_cast<int>(s)); into >= 0) {
      fresh[s] = inputs[into];
      b.ptrs[s] = inputs[into].ptr();
    }
  for (int s : d.per_call_slots)
    b.ptrs[s] = (fresh[s] = DeviceTensor::empty_on(h_.slot_types[s].dtype, h_.slot_types[s].shape, stream)).ptr();
  // Workspaces: the graph's, made once (its launches are ordered one after
  // another); kernel by kernel, this call's own, on its stream.
  if (first || !d.as_graph) make_workspaces(b, stream);
  const DriverApi& cu = driver();
  if (first) {
    try {
      set_params(b);
      if (d.as_graph) build_graph(d);
    } catch (...) {  // the next call starts over
      b.params.clear();
      throw;
    }
  } else {
    try {
      for (size_t i = 0; i < h_.steps.size(); ++i) {
        bool moved = false;
        for (int s : h_.steps[i].buffers) moved |= b.ptrs[s] != d.applied[s];
        if (!moved) continue;
        encode_maps(b, i);
        if (d.as_graph && b.nodes[i]) {
          const CUDA_KERNEL_NODE_PARAMS p = node_params(b, i);
          check(cu.cuGraphExecKernelNodeSetParams(b.graph.get(), b.nodes[i], &p), "cuGraphExecKernelNodeSetParams");
        }
      }
    } catch (...) {
      // Steps before the failing one now hold this call's pointers: no slot
      // may count as applied, so the next call updates every step.
      d.applied.assign(d.applied.size(), ~CUdeviceptr{0});
      throw;
    }
  }
  d.applied = b.ptrs;
  if (d.as_graph) check(cu.cuGraphLaunch(b.graph.get(), stream), "cuGraphLaunch");
  else launch_each(b, false, stream);
  // Index guards make the call wait for its kernels: an out-of-range index is
  // reported by this call, not by a later one.
  h_.check_guards([&](size_t g) {
    const int s = h_.guard_slots[g];
    return static_cast<float>((fresh[s].ptr() ? fresh[s] : b.slots[s]).download(stream).get(0));
  });
  std::vector<DeviceTensor> results;
  for (int s : h_.result_slots) results.push_back(static_cast<size_t>(s) < inputs.size() ? inputs[s] : fresh[s]);
  return results;  // per-call intermediates go back to the stream's pool, after the launches that use them
}

RunResult CudaExecutable::run_on(const std::vector<Tensor>& inputs, ThreadPool*, bool keep_values) const {
  std::unique_ptr<Binding> b = bind(inputs);
  launch(*b, Timing::each_kernel);
  RunResult r;
  r.launches = finish(*b);
  r.outputs = outputs(*b);
  if (keep_values) {
    for (const DeviceTensor& t : own<DeviceBinding>(*b).slots) r.values.push_back(t.download(stream_));
    for (int into : h_.output_into)  // an input an in-place result overwrote, as the kernels read it
      if (into >= 0) r.values[into] = inputs[into];
  }
  return r;
}

}  // namespace tessera::runtime::cuda

namespace tessera::runtime::cuda {

double copy_bandwidth_gbs(size_t bytes) {
  const DriverApi& cu = driver();
  DeviceTensor a = DeviceTensor::empty(DType::F32, {static_cast<int64_t>(bytes / 4)});
  DeviceTensor b = DeviceTensor::empty(DType::F32, {static_cast<int64_t>(bytes / 4)});
  CUstream s;
  check(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUevent e0, e1;
  check(cu.cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cu.cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate");
  std::vector<double> ms;
  for (int i = 0; i < 23; ++i) {
    check(cu.cuEventRecord(e0, s), "cuEventRecord");
    check(cu.cuMemcpyDtoDAsync(b.ptr(), a.ptr(), a.nbytes(), s), "cuMemcpyDtoDAsync");
    check(cu.cuEventRecord(e1, s), "cuEventRecord");
    check(cu.cuEventSynchronize(e1), "cuEventSynchronize");
    float t = 0;
    check(cu.cuEventElapsedTime(&t, e0, e1), "cuEventElapsedTime");
    if (i >= 3) ms.push_back(t);
  }
  cu.cuEventDestroy(e0);
  cu.cuEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  return 2.0 * static_cast<double>(a.nbytes()) / (ms[ms.size() / 2] * 1e-3) / 1e9;
}

void evict_l2(CUstream stream) {
  const DriverApi& cu = driver();
  static const DeviceTensor junk = [&] {
    int l2 = 0;
    check(cu.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device()), "cuDeviceGetAttribute");
    return DeviceTensor::empty(DType::I32, {std::max<int64_t>(l2, 1 << 20)});  // four times the L2's bytes
  }();
  static unsigned char value = 0;
  check(cu.cuMemsetD8Async(junk.ptr(), ++value, junk.nbytes(), stream), "cuMemsetD8Async");
}

}  // namespace tessera::runtime::cuda
