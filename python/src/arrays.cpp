#include "arrays.hpp"

#include <memory>
#include <string_view>

#include "support/diagnostic.hpp"

namespace nb = nanobind;

namespace tessera::python {

namespace {

Framework framework_from_module(nb::handle type) {
  // The type's module, not an isinstance check: no framework is imported here.
  const nb::object module = nb::getattr(type, "__module__", nb::none());
  if (!nb::isinstance<nb::str>(module)) return Framework::Other;
  const std::string_view name = nb::borrow<nb::str>(module).c_str();
  auto from = [&](std::string_view package) { return name.substr(0, name.find('.')) == package; };
  if (from("numpy")) return Framework::Numpy;
  if (from("torch")) return Framework::Torch;
  if (from("cupy")) return Framework::Cupy;
  return Framework::Other;
}

// torch's own DLPack functions, looked up once. Tensor.__dlpack__ is Python
// code around to_dlpack whose checks cost most of a small call; the ones
// that matter here are made in borrow_array. _from_dlpack is the C function
// behind torch.from_dlpack, which for a CUDA capsule would also query the
// current stream in Python.
struct TorchHooks {
  nb::object to_dlpack, from_dlpack, is_grad_enabled;
};

const TorchHooks& torch_hooks() {
  static const TorchHooks* hooks = [] {  // kept to exit, as the module is
    const nb::module_ torch = nb::module_::import_("torch");
    const nb::object c = torch.attr("_C");
    auto* h = new TorchHooks;
    h->to_dlpack = torch.attr("to_dlpack");
    h->from_dlpack = nb::hasattr(c, "_from_dlpack") ? c.attr("_from_dlpack")
                                                    : nb::module_::import_("torch.utils.dlpack").attr("from_dlpack");
    h->is_grad_enabled = torch.attr("is_grad_enabled");
    return h;
  }();
  return *hooks;
}

}  // namespace

Framework framework_of(nb::handle array) {
  // Remembered per type (a handful: ndarray, Tensor, Parameter...); the cache
  // holds each type, so its address cannot be reused by another.
  static std::vector<std::pair<nb::object, Framework>>* seen = new std::vector<std::pair<nb::object, Framework>>();
  const nb::handle type = array.type();
  for (const auto& [t, f] : *seen)
    if (t.is(type)) return f;
  const Framework f = framework_from_module(type);
  if (seen->size() < 32) seen->emplace_back(nb::borrow(type), f);
  return f;
}

namespace {

std::string where(size_t position) { return "argument " + std::to_string(position); }

DType dtype_of(const nb::dlpack::dtype& d, size_t position) {
  using Code = nb::dlpack::dtype_code;
  if (d.lanes == 1) {
    if (d.code == static_cast<uint8_t>(Code::Float) && d.bits == 32) return DType::F32;
    if (d.code == static_cast<uint8_t>(Code::Float) && d.bits == 64) return DType::F64;
    if (d.code == static_cast<uint8_t>(Code::Float) && d.bits == 16) return DType::F16;
    if (d.code == static_cast<uint8_t>(Code::Bfloat) && d.bits == 16) return DType::BF16;
    if (d.code == static_cast<uint8_t>(Code::Bool) && d.bits == 8) return DType::I1;
    if (d.code == static_cast<uint8_t>(Code::Int) && d.bits == 32) return DType::I32;
    if (d.code == static_cast<uint8_t>(Code::Int) && d.bits == 64) return DType::I64;
  }
  static const char* codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  const std::string name = d.code < 7 ? codes[d.code] : "code " + std::to_string(d.code);
  fail("E932", where(position) + " has elements of " + name + std::to_string(d.bits) +
                   "; Tessera computes in f16, bf16, f32, f64, bool, int32 and int64 (convert it first, e.g. "
                   ".astype(np.float32))");
}

}  // namespace

namespace {

// The DLPack capsule of `object`, or null to let nanobind ask for it.
nb::object capsule_of(nb::handle object, Framework framework, size_t position,
                      std::optional<intptr_t> consumer_stream) {
  const bool torch = framework == Framework::Torch;
  if (torch && nb::cast<bool>(object.attr("requires_grad")) && nb::cast<bool>(torch_hooks().is_grad_enabled()))
    fail("E935", where(position) +
                     " is a torch tensor that requires grad while autograd is on: Tessera's kernels record no "
                     "gradient for torch (call under torch.no_grad(), or pass x.detach())");
  if (consumer_stream && nb::hasattr(object, "__dlpack_device__")) {
    const nb::tuple device = nb::borrow<nb::tuple>(object.attr("__dlpack_device__")());
    if (nb::cast<int>(device[0]) == nb::device::cuda::value) {
      // torch's __dlpack__ refuses a tensor that requires grad even under
      // no_grad; its detached view is the same memory.
      const nb::object exporter = torch ? object.attr("detach")() : nb::borrow(object);
      return exporter.attr("__dlpack__")(nb::arg("stream") = *consumer_stream);
    }
  }
  if (!torch) return {};
  try {
    return torch_hooks().to_dlpack(object);
  } catch (const nb::python_error&) {  // sparse, conjugated...: nanobind's import says no the same way
    return {};
  }
}

}  // namespace

BorrowedArray borrow_array(nb::handle object, size_t position, std::optional<intptr_t> consumer_stream) {
  BorrowedArray a;
  a.framework = framework_of(object);
  const nb::object capsule = capsule_of(object, a.framework, position, consumer_stream);
  // convert=false: a failed import is an error, never a converted copy.
  if (!nb::try_cast(capsule.is_valid() ? capsule : nb::borrow(object), a.array, /*convert=*/false))
    fail("E934", where(position) + " is a " + std::string(nb::type_name(object.type()).c_str()) +
                     ", not an array (Tessera takes objects with __dlpack__: numpy, torch, CuPy, its own results)");
  const int device = a.array.device_type();
  if (device == nb::device::cpu::value || device == nb::device::cuda_host::value) a.place = Place::Host;
  else if (device == nb::device::cuda::value) a.place = Place::Cuda;
  else
    fail("E931", where(position) + " lives on DLPack device type " + std::to_string(device) +
                     "; Tessera runs on the host CPU and on CUDA devices");
  a.device_id = a.array.device_id();
  a.dtype = dtype_of(a.array.dtype(), position);
  int64_t expect = 1;  // the C-order stride, in elements
  a.shape.resize(a.array.ndim());
  for (size_t i = a.array.ndim(); i-- > 0;) {
    const int64_t extent = static_cast<int64_t>(a.array.shape(i));
    a.shape[i] = extent;
    // Dimensions of extent 1 (and empty arrays) may have any stride.
    if (extent != 1 && a.array.stride(i) != expect && a.array.size() != 0)
      fail("E930", where(position) + " is not C-contiguous (dimension " + std::to_string(i) + " has stride " +
                       std::to_string(a.array.stride(i)) + " elements, " + std::to_string(expect) +
                       " expected); Tessera takes arrays without copying them: pass np.ascontiguousarray(x) or "
                       "x.contiguous()");
    expect *= extent;
  }
  return a;
}

std::shared_ptr<void> keep_alive(const BorrowedArray& a) {
  // The deleter may run where the GIL is not held (a tensor copy outliving
  // a kernel launch): it takes it before the array's reference goes.
  using Array = nb::ndarray<nb::ro>;
  return std::shared_ptr<void>(new Array(a.array), [](void* p) {
    nb::gil_scoped_acquire gil;
    delete static_cast<Array*>(p);
  });
}

Tensor host_tensor(const BorrowedArray& a) { return Tensor::borrow(a.dtype, a.shape, a.data(), keep_alive(a)); }

namespace {

nb::dlpack::dtype dlpack_dtype(DType t) {
  using Code = nb::dlpack::dtype_code;
  switch (t) {
    case DType::F16: return {static_cast<uint8_t>(Code::Float), 16, 1};
    case DType::BF16: return {static_cast<uint8_t>(Code::Bfloat), 16, 1};
    case DType::F32: return {static_cast<uint8_t>(Code::Float), 32, 1};
    case DType::F64: return {static_cast<uint8_t>(Code::Float), 64, 1};
    case DType::I1: return {static_cast<uint8_t>(Code::Bool), 8, 1};
    case DType::I32: return {static_cast<uint8_t>(Code::Int), 32, 1};
    case DType::I64: return {static_cast<uint8_t>(Code::Int), 64, 1};
  }
  return {};
}

template <class... F>
nb::object make_array(void* data, DType dtype, const std::vector<int64_t>& extents, nb::handle owner, int device,
                      int device_id) {
  std::vector<size_t> shape(extents.begin(), extents.end());
  nb::ndarray<F...> out(data, shape.size(), shape.data(), owner, nullptr, dlpack_dtype(dtype), device, device_id);
  return nb::cast(out, nb::rv_policy::reference);
}

}  // namespace

nb::object export_host(const Tensor& t, Framework framework) {
  // The capsule holds a copy of the tensor, so its storage lives as long as
  // the array does.
  nb::capsule owner(new Tensor(t), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  // numpy cannot hold bfloat16: such a result goes out as a DLPack array.
  void* data = const_cast<void*>(t.data());
  const int cpu = nb::device::cpu::value;
  if (framework == Framework::Numpy && t.dtype() != DType::BF16)
    return make_array<nb::numpy>(data, t.dtype(), t.shape(), owner, cpu, 0);
  if (framework == Framework::Torch)
    return torch_hooks().from_dlpack(make_array<>(data, t.dtype(), t.shape(), owner, cpu, 0));
  return make_array<nb::array_api>(data, t.dtype(), t.shape(), owner, cpu, 0);
}

nb::object export_device(const runtime::cuda::DeviceTensor& t, int device_id, Framework framework) {
  using runtime::cuda::DeviceTensor;
  nb::capsule owner(new DeviceTensor(t), [](void* p) noexcept { delete static_cast<DeviceTensor*>(p); });
  void* data = reinterpret_cast<void*>(t.ptr());
  const int cuda = nb::device::cuda::value;
  if (framework == Framework::Torch)  // a bare capsule (no framework) to torch's C function
    return torch_hooks().from_dlpack(make_array<>(data, t.dtype(), t.shape(), owner, cuda, device_id));
  if (framework == Framework::Cupy) return make_array<nb::cupy>(data, t.dtype(), t.shape(), owner, cuda, device_id);
  return make_array<nb::array_api>(data, t.dtype(), t.shape(), owner, cuda, device_id);
}

}  // namespace tessera::python
