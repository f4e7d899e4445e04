// tessera._core.Program: IR text compiled for a target and loaded once, then
// called on arrays without copies. On the CPU the caller's arrays are the
// kernels' buffers; on CUDA the caller's device memory is, and launches go
// on the caller's stream without waiting. Every call records where each
// kernel ran; with check=True the oracle checks every kernel and result.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstring>
#include <optional>

#include "arbiter/arbiter.hpp"
#include "arbiter/region_program.hpp"
#include "bindings.hpp"
#include "ir/parser.hpp"
#include "ir/verify.hpp"
#include "oracle/run_check.hpp"
#include "program.hpp"
#include "runtime/cuda/cuda_executable.hpp"
#include "runtime/executable.hpp"
#include "support/diagnostic.hpp"
#include "targets/lane.hpp"
#include "tessera/tessera.hpp"

namespace nb = nanobind;

namespace tessera::python {

namespace {

// `tune`: the arbiter measures every candidate of each matmul region (or the
// tuning ledger answers, docs/evidence.md) and the program uses its picks;
// otherwise every matmul is the synthesized kernel, as `run --no-tune`.
PyProgram compile(const std::string& text, const std::string& target, const std::string& func,
                  const std::string& filename, bool tune) {
  const targets::Lane& lane = targets::runnable(target, /*emulate=*/false);
  const std::unique_ptr<ir::Module> m = ir::parse(text, filename);
  std::vector<std::string> table;
  Program::Candidates candidates;
  const size_t regions = ir::detect_layer(*m) == ir::Layer::Graph ? arbiter::matmul_regions(*m).size() : 0;
  if (tune && regions > 0 && !lane.arbiter_lane.empty()) {
    const auto decisions = arbiter::arbitrate(*m, arbiter::runner(lane.arbiter_lane), {});
    for (const arbiter::Decision& d : decisions) table.push_back(arbiter::describe(d, /*table=*/true));
    candidates = arbiter::choices(decisions);
  }
  return PyProgram{Program::compile(*m, target, func, candidates),
                   target,
                   std::move(table),
                   regions,
                   &lane,
                   {},
                   nullptr,
                   {},
                   {},
                   {}};
}

nb::list type_list(const std::vector<ir::Type>& types) {
  nb::list out;
  for (const ir::Type& t : types) {
    nb::list shape;
    for (int64_t d : t.shape) shape.append(d);
    out.append(nb::make_tuple(std::string(dtype_name(t.dtype)), nb::tuple(shape)));
  }
  return out;
}

nb::list launch_list(const std::vector<runtime::LaunchRecord>& launches) {
  nb::list out;
  for (const runtime::LaunchRecord& r : launches) {
    nb::dict d;
    d["kernel"] = r.kernel;
    d["placement"] = r.placement;
    d["sha256"] = r.sha256;
    d["programs"] = r.programs;
    d["wall_ns"] = r.kernel_wall_ns;
    d["implementation"] = r.implementation;
    d["graph"] = r.graph;
    out.append(d);
  }
  return out;
}

nb::object check_report(const std::optional<oracle::RunCheck>& c) {
  if (!c) return nb::none();
  nb::list lines;
  for (const oracle::CheckedValue& v : c->values) lines.append(v.describe());
  lines.append(c->summary());
  nb::dict d;
  d["ok"] = c->ok;
  d["lines"] = lines;
  d["first_failure"] = c->first_failure;
  d["seconds"] = c->seconds;
  return d;
}

// The host lane: the arrays are the kernels' buffers; the results are new
// host tensors handed out without a copy.
nb::tuple call_host(PyProgram& self, const std::vector<BorrowedArray>& in, bool check) {
  const Framework framework = in.empty() ? Framework::Numpy : in[0].framework;
  std::vector<Tensor> inputs;
  inputs.reserve(in.size());
  for (const BorrowedArray& a : in) inputs.push_back(host_tensor(a));
  const runtime::Executable& exe = self.program.executable();
  runtime::RunResult r;
  {
    nb::gil_scoped_release released;  // kernels run without the GIL: other Python threads go on
    r = exe.run(inputs, nullptr, check);
    if (check) self.last_check = oracle::check_run(*self.program.graph(), exe.schedule(), r.values);
  }
  self.last_launches = std::move(r.launches);
  self.last_device = nullptr;
  self.last_inputs.clear();
  for (const Tensor& t : inputs) self.last_inputs.push_back(reinterpret_cast<uintptr_t>(t.data()));
  self.last_outputs.clear();
  nb::list out;
  for (const Tensor& t : r.outputs) {
    self.last_outputs.push_back(reinterpret_cast<uintptr_t>(t.data()));
    out.append(export_host(t, framework));
  }
  if (check && !self.last_check->ok) fail("E880", self.last_check->summary() + "(the report: last_check)");
  return nb::tuple(out);
}

// torch's current stream on `device`: through the raw accessor Triton uses
// (no Stream object per call), else the public API.
CUstream torch_current_stream(int device) {
  static nb::object* raw = [] {  // kept to exit
    nb::object c = nb::module_::import_("torch._C");
    return new nb::object(nb::hasattr(c, "_cuda_getCurrentRawStream") ? c.attr("_cuda_getCurrentRawStream")
                                                                      : nb::none());
  }();
  nb::object handle = !raw->is_none()
                          ? (*raw)(device)
                          : nb::module_::import_("torch.cuda").attr("current_stream")(device).attr("cuda_stream");
  return reinterpret_cast<CUstream>(nb::cast<uintptr_t>(handle));
}

// check=True on CUDA arrays: the inputs, read back before the call, go
// through the path of `tessera run --check --target cuda` (every
// value kept); the oracle checks that run, and the results the call returns
// must equal that run's bit for bit (E881), so what was checked is what the
// caller gets. The call waits for the caller's stream.
void check_cuda_run(PyProgram& self, const runtime::cuda::CudaExecutable& exe, const std::vector<Tensor>& host_inputs,
                    const std::vector<runtime::cuda::DeviceTensor>& results, CUstream stream) {
  nb::gil_scoped_release released;
  const runtime::RunResult checked = exe.run(host_inputs, nullptr, /*keep_values=*/true);
  self.last_check = oracle::check_run(*self.program.graph(), exe.schedule(), checked.values);
  for (size_t i = 0; i < results.size(); ++i) {
    const Tensor got = results[i].download(stream);
    if (got.nbytes() != checked.outputs[i].nbytes() ||
        std::memcmp(got.data(), checked.outputs[i].data(), got.nbytes()) != 0)
      fail("E881", "result %" + exe.output_names()[i] +
                       " of this call differs from the checked run's on the same inputs: its kernels are not "
                       "deterministic, so the check does not vouch for it");
  }
  if (!self.last_check->ok) fail("E880", self.last_check->summary() + "(the report: last_check)");
}

// The CUDA lane: the caller's device memory in, results allocated on the
// caller's stream, launches enqueued there and not waited for.
nb::tuple call_cuda(PyProgram& self, const std::vector<BorrowedArray>& in, nb::handle stream, bool check) {
  const auto* exe = dynamic_cast<const runtime::cuda::CudaExecutable*>(&self.program.executable());
  if (!exe) fail("E931", "CUDA arrays given to a program for target '" + self.target + "'");
  const runtime::HostSchedule& h = exe->schedule();
  // The arrays live through the call (the caller holds them); only a result
  // that is an argument itself must keep its array alive.
  const bool in_place = std::any_of(h.output_into.begin(), h.output_into.end(), [](int i) { return i >= 0; });
  const bool returns_an_input = in_place || std::any_of(h.result_slots.begin(), h.result_slots.end(),
                                                        [&](int s) { return static_cast<size_t>(s) < in.size(); });
  std::vector<runtime::cuda::DeviceTensor> inputs;
  inputs.reserve(in.size());
  for (const BorrowedArray& a : in) {
    if (a.device_id != 0)
      fail("E931", "an array on CUDA device " + std::to_string(a.device_id) + ": Tessera drives device 0 only");
    inputs.push_back(runtime::cuda::DeviceTensor::borrow(a.dtype, a.shape, reinterpret_cast<CUdeviceptr>(a.data()),
                                                         returns_an_input ? keep_alive(a) : nullptr));
  }
  const Framework framework = in.empty() ? Framework::Other : in[0].framework;
  // The caller's stream: given, or torch's current one for torch tensors (as
  // torch's own ops use), else the legacy default stream.
  CUstream s = nullptr;
  if (!stream.is_none()) s = reinterpret_cast<CUstream>(nb::cast<uintptr_t>(stream));
  else if (framework == Framework::Torch) s = torch_current_stream(in[0].device_id);
  // check: the inputs read before the call (an in-place result overwrites its argument)
  std::vector<Tensor> host_inputs;
  if (check)
    for (const runtime::cuda::DeviceTensor& t : inputs) host_inputs.push_back(t.download(s));
  std::vector<runtime::cuda::DeviceTensor> results = exe->run_device(inputs, s);
  self.last_device = exe;
  if (check) check_cuda_run(self, *exe, host_inputs, results, s);
  self.last_inputs.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) self.last_inputs[i] = static_cast<uintptr_t>(inputs[i].ptr());
  self.last_outputs.resize(results.size());
  nb::list out;
  for (size_t i = 0; i < results.size(); ++i) {
    self.last_outputs[i] = static_cast<uintptr_t>(results[i].ptr());
    out.append(export_device(results[i], in.empty() ? 0 : in[0].device_id, framework));
  }
  return nb::tuple(out);
}

}  // namespace

std::vector<BorrowedArray> borrow_call_arrays(nb::handle arrays, nb::handle stream) {
  std::optional<intptr_t> consumer;  // DLPack's stream numbering: 1 is the legacy default stream
  if (!stream.is_none()) consumer = nb::cast<uintptr_t>(stream) == 0 ? 1 : nb::cast<intptr_t>(stream);
  const size_t n = nb::len(arrays);
  std::vector<BorrowedArray> in;
  in.reserve(n);
  for (size_t i = 0; i < n; ++i) in.push_back(borrow_array(arrays[i], i, consumer));
  return in;
}

nb::tuple run_program(PyProgram& self, const std::vector<BorrowedArray>& in, nb::handle stream, bool check) {
  if (check && !self.program.graph())
    fail("E124", "check needs the program as Graph IR (the oracle reads what the user meant)");
  const bool cuda = !in.empty() && in[0].place == Place::Cuda;
  for (size_t i = 0; i < in.size(); ++i)
    if ((in[i].place == Place::Cuda) != cuda)
      fail("E931", "argument " + std::to_string(i) + " is on the " + (cuda ? "host" : "CUDA device") +
                       " and others are not: Tessera moves no data between devices");
  const bool gpu_lane = self.lane->execution == targets::Execution::kNativeGpu;
  if (cuda != gpu_lane)
    fail("E931", std::string(cuda ? "CUDA" : "host") + " arrays given to a program compiled for target '" +
                     self.target + "', which runs on the " + (gpu_lane ? "GPU" : "host") +
                     " (compile for the arrays' device; nothing is copied over)");
  return cuda ? call_cuda(self, in, stream, check) : call_host(self, in, check);
}

namespace {

nb::tuple call(PyProgram& self, nb::args arrays, nb::handle stream, bool check) {
  return run_program(self, borrow_call_arrays(arrays, stream), stream, check);
}

// Mean wall ns of one call's native part (the C++ API's run on the same
// arrays), repeated in C++: what the Python call overhead is measured against.
double native_ns(PyProgram& self, nb::args arrays, int64_t repeat) {
  if (repeat < 1) fail("E122", "repeat must be at least 1");
  std::vector<BorrowedArray> in;
  for (size_t i = 0; i < arrays.size(); ++i) in.push_back(borrow_array(arrays[i], i));
  const runtime::Executable& exe = self.program.executable();
  nb::gil_scoped_release released;
  std::chrono::steady_clock::time_point t0;
  if (const auto* cuda = dynamic_cast<const runtime::cuda::CudaExecutable*>(&exe)) {
    std::vector<runtime::cuda::DeviceTensor> inputs;
    for (const BorrowedArray& a : in)
      inputs.push_back(
          runtime::cuda::DeviceTensor::borrow(a.dtype, a.shape, reinterpret_cast<CUdeviceptr>(a.data()), nullptr));
    t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < repeat; ++i) cuda->run_device(inputs, nullptr);
  } else {
    std::vector<Tensor> inputs;
    for (const BorrowedArray& a : in) inputs.push_back(Tensor::borrow(a.dtype, a.shape, a.data(), nullptr));
    t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < repeat; ++i) exe.run(inputs);
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
         static_cast<double>(repeat);
}

}  // namespace

void bind_program(nb::module_& m) {
  nb::class_<PyProgram>(m, "Program", "IR text (any layer) compiled for a target and loaded, ready to call.")
      .def(nb::new_(&compile), nb::arg("text"), nb::arg("target") = "cpu", nb::arg("func") = "",
           nb::arg("filename") = "<input>", nb::arg("tune") = false)
      .def_prop_ro("matmul_regions", [](const PyProgram& p) { return p.matmul_regions; })
      .def_prop_ro(
          "arbiter_table", [](const PyProgram& p) { return p.arbiter_table; },
          "The arbiter's table for each matmul region (compiled with tune=True; else empty).")
      .def_prop_ro("target", [](const PyProgram& p) { return p.target; })
      .def_prop_ro("input_names", [](const PyProgram& p) { return p.program.executable().input_names(); })
      .def_prop_ro("output_names", [](const PyProgram& p) { return p.program.executable().output_names(); })
      .def_prop_ro("input_types", [](const PyProgram& p) { return type_list(p.program.executable().input_types()); })
      .def_prop_ro("output_types", [](const PyProgram& p) { return type_list(p.program.executable().output_types()); })
      .def_prop_ro("kernels",
                   [](const PyProgram& p) {
                     nb::list out;
                     for (const ir::KernelDesc& k : p.program.executable().kernels()) {
                       nb::dict d;
                       d["name"] = k.sym;
                       d["sha256"] = k.sha256;
                       d["implementation"] = k.library.empty() ? std::string("tessera") : k.library;
                       d["grid"] = k.grid;
                       out.append(d);
                     }
                     return out;
                   })
      .def(
          "emit", [](const PyProgram& p, const std::string& layer) { return p.program.emit(layer); }, nb::arg("layer"),
          "The text of one layer: graph, schedule, tile, target, or source (the kernels).")
      .def("__call__", &call, nb::arg("arrays"), nb::kw_only(), nb::arg("stream") = nb::none(),
           nb::arg("check") = false,
           "Runs on arrays (numpy, torch, CuPy, earlier results) without copying them; returns a tuple of results.")
      .def("_native_ns", &native_ns, nb::arg("arrays"), nb::kw_only(), nb::arg("repeat") = 1000,
           "Mean ns of the native part of one call, looped in C++ (the overhead baseline for benchmarks).")
      .def_prop_ro("last_launches",
                   [](const PyProgram& p) {
                     return launch_list(p.last_device ? p.last_device->device_launches() : p.last_launches);
                   })
      .def_prop_ro("last_check", [](const PyProgram& p) { return check_report(p.last_check); })
      .def_prop_ro("last_pointers", [](const PyProgram& p) {
        nb::dict d;
        d["inputs"] = p.last_inputs;
        d["outputs"] = p.last_outputs;
        return d;
      });
}

}  // namespace tessera::python
