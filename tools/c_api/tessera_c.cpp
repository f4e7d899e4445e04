// The C ABI (include/tessera/tessera.h) over the C++ API (tessera.hpp).
// Every entry point runs its body inside guard(), which turns every exception
// into a tsr_status plus this thread's last-error text, so nothing C++ ever
// crosses the ABI. Buffers are copied in and out: the runtime's Tensor owns
// its storage, and the caller keeps ownership of every tsr_buffer.
#define TESSERA_C_BUILD 1
#include "tessera/tessera.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/graph_dialect.hpp"
#include "ir/ir.hpp"
#include "ir/verify.hpp"
#include "runtime/executable.hpp"
#include "runtime/tensor.hpp"
#include "support/diagnostic.hpp"
#include "support/dtype.hpp"
#include "tessera/tessera.hpp"

struct tsr_program {
  tessera::Program program;
};

namespace {

using tessera::DType;
using tessera::ir::Type;

// ---- last error -------------------------------------------------------------

thread_local std::string t_error;
thread_local std::string t_code;
thread_local bool t_error_oom = false;  // set when even the error text could not be stored

constexpr const char* kOomText = "error[E990]: out of memory";

void clear_error() noexcept {
  t_error.clear();
  t_code.clear();
  t_error_oom = false;
}

void set_error(const std::string& code, const std::string& text) noexcept {
  try {
    t_error = text;
    t_code = code;
    t_error_oom = false;
  } catch (...) {
    t_error.clear();
    t_code.clear();
    t_error_oom = true;
  }
}

// An error raised by the C layer itself, with the status it maps to.
struct ApiError {
  tsr_status status;
  std::string code;
  std::string message;
};

[[noreturn]] void arg_fail(const char* code, const std::string& message) {
  throw ApiError{TSR_ERR_ARGUMENT, code, message};
}

void require(const void* p, const char* fn, const char* what) {
  if (!p) arg_fail("E900", std::string(fn) + ": " + what + " is NULL");
}

// Runs `body`; a tessera::Error maps to `on_tessera_error`, everything else as documented.
template <class F>
tsr_status guard(tsr_status on_tessera_error, F&& body) noexcept {
  clear_error();
  try {
    body();
    return TSR_OK;
  } catch (const ApiError& e) {
    set_error(e.code, "error[" + e.code + "]: " + e.message);
    return e.status;
  } catch (const tessera::Error& e) {
    set_error(e.code(), e.what());
    return on_tessera_error;
  } catch (const std::bad_alloc&) {
    set_error("E990", kOomText);
    return TSR_ERR_INTERNAL;
  } catch (const std::exception& e) {
    try {
      set_error("E999", std::string("error[E999]: internal error: ") + e.what());
    } catch (...) {
      set_error("E999", "error[E999]: internal error");
    }
    return TSR_ERR_INTERNAL;
  } catch (...) {
    set_error("E999", "error[E999]: internal error: unknown exception");
    return TSR_ERR_INTERNAL;
  }
}

// ---- dtypes and shapes ----------------------------------------------------------

// The integer a C caller stored in an enum object. C allows any value of the
// underlying type there; in C++ loading an out-of-range value as the enum type
// is undefined, so the bytes are read as the underlying integer instead.
template <class E>
long long raw_enum(const E& e) {
  std::underlying_type_t<E> v;
  std::memcpy(&v, &e, sizeof v);
  return static_cast<long long>(v);
}

bool valid_dtype(const tsr_dtype& d) {
  long long v = raw_enum(d);
  return v >= TSR_F16 && v <= TSR_I64;
}

DType to_dtype(tsr_dtype d) {
  switch (d) {
    case TSR_F16: return DType::F16;
    case TSR_BF16: return DType::BF16;
    case TSR_F32: return DType::F32;
    case TSR_F64: return DType::F64;
    case TSR_I1: return DType::I1;
    case TSR_I32: return DType::I32;
    case TSR_I64: return DType::I64;
  }
  throw ApiError{TSR_ERR_INTERNAL, "E999", "invalid dtype value"};
}

tsr_dtype from_dtype(DType d) {
  switch (d) {
    case DType::F16: return TSR_F16;
    case DType::BF16: return TSR_BF16;
    case DType::F32: return TSR_F32;
    case DType::F64: return TSR_F64;
    case DType::I1: return TSR_I1;
    case DType::I32: return TSR_I32;
    case DType::I64: return TSR_I64;
  }
  throw ApiError{TSR_ERR_INTERNAL, "E999", "the program uses a dtype the C ABI does not know"};
}

const char* dtype_c_name(const tsr_dtype& d) {
  switch (raw_enum(d)) {
    case TSR_F16: return "f16";
    case TSR_BF16: return "bf16";
    case TSR_F32: return "f32";
    case TSR_F64: return "f64";
    case TSR_I1: return "i1";
    case TSR_I32: return "i32";
    case TSR_I64: return "i64";
  }
  return nullptr;
}

// "tensor<4x8xf32>" for a buffer already checked by check_well_formed.
std::string buffer_type_string(const tsr_buffer& b) {
  std::string s = "tensor<";
  for (int32_t i = 0; i < b.rank; ++i) s += std::to_string(b.shape[i]) + "x";
  s += dtype_c_name(b.dtype);
  return s + ">";
}

void fill_info(const std::string& fn, const char* kind, size_t index, const std::string& name, const Type& t,
               tsr_tensor_info* info) {
  if (t.shape.size() > TSR_MAX_RANK)
    arg_fail("E902", fn + ": " + kind + " " + std::to_string(index) + " (%" + name + ") has rank " +
                         std::to_string(t.shape.size()) + ", above TSR_MAX_RANK (" + std::to_string(TSR_MAX_RANK) +
                         ")");
  tsr_tensor_info out{};
  out.name = name.c_str();
  out.dtype = from_dtype(t.dtype);
  out.rank = static_cast<int32_t>(t.shape.size());
  for (size_t i = 0; i < t.shape.size(); ++i) out.shape[i] = t.shape[i];
  *info = out;
}

// Checks one caller buffer against the program's type for that slot.
void check_buffer(const char* kind, size_t index, const std::string& name, const std::string& func, const tsr_buffer& b,
                  const Type& want) {
  const std::string who = std::string("tsr_program_run: ") + kind + " " + std::to_string(index) + " (%" + name + ")";
  if (!valid_dtype(b.dtype))
    throw ApiError{TSR_ERR_ARGUMENT, "E905", who + " has an invalid dtype value " + std::to_string(raw_enum(b.dtype))};
  if (b.rank < 0) throw ApiError{TSR_ERR_ARGUMENT, "E905", who + " has a negative rank " + std::to_string(b.rank)};
  if (b.rank > 0 && !b.shape)
    throw ApiError{TSR_ERR_ARGUMENT, "E905", who + " has rank " + std::to_string(b.rank) + " but a NULL shape"};
  for (int32_t i = 0; i < b.rank; ++i)
    if (b.shape[i] < 0)
      throw ApiError{TSR_ERR_ARGUMENT, "E905",
                     who + " has a negative dimension " + std::to_string(b.shape[i]) + " at axis " + std::to_string(i)};
  bool same = to_dtype(b.dtype) == want.dtype && static_cast<size_t>(b.rank) == want.shape.size();
  for (int32_t i = 0; same && i < b.rank; ++i) same = b.shape[i] == want.shape[i];
  if (!same) arg_fail("E904", who + " is " + buffer_type_string(b) + " but @" + func + " expects " + want.str());
  if (!b.data && want.numel() > 0) arg_fail("E905", who + " has NULL data");
}

void copy_string(char* dst, size_t cap, const std::string& src) {
  size_t n = src.size() < cap - 1 ? src.size() : cap - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

}  // namespace

extern "C" {

const char* tsr_last_error(void) { return t_error_oom ? kOomText : t_error.c_str(); }

const char* tsr_last_error_code(void) { return t_error_oom ? "E990" : t_code.c_str(); }

const char* tsr_status_name(tsr_status status) {
  switch (raw_enum(status)) {
    case TSR_OK: return "TSR_OK";
    case TSR_ERR_COMPILE: return "TSR_ERR_COMPILE";
    case TSR_ERR_RUNTIME: return "TSR_ERR_RUNTIME";
    case TSR_ERR_ARGUMENT: return "TSR_ERR_ARGUMENT";
    case TSR_ERR_INTERNAL: return "TSR_ERR_INTERNAL";
  }
  return "unknown";
}

const char* tsr_dtype_name(tsr_dtype dtype) { return dtype_c_name(dtype); }

size_t tsr_dtype_size(tsr_dtype dtype) {
  switch (raw_enum(dtype)) {
    case TSR_F16:
    case TSR_BF16: return 2;
    case TSR_I1: return 1;
    case TSR_F32:
    case TSR_I32: return 4;
    case TSR_F64:
    case TSR_I64: return 8;
  }
  return 0;
}

tsr_status tsr_program_compile(const char* ir_text, const char* target, const char* func, tsr_program** out) {
  if (out) *out = nullptr;
  return guard(TSR_ERR_COMPILE, [&] {
    require(out, "tsr_program_compile", "out");
    require(ir_text, "tsr_program_compile", "ir_text");
    auto* p = new tsr_program{tessera::Program::compile_text(ir_text, target ? target : "cpu", func ? func : "")};
    *out = p;
  });
}

void tsr_program_free(tsr_program* program) {
  try {
    delete program;
  } catch (...) {
  }
}

tsr_status tsr_program_emit(const tsr_program* program, const char* layer, char** text_out) {
  if (text_out) *text_out = nullptr;
  // Emit failures (unknown layer, layer not available) are the caller's request.
  return guard(TSR_ERR_ARGUMENT, [&] {
    require(text_out, "tsr_program_emit", "text_out");
    require(program, "tsr_program_emit", "program");
    require(layer, "tsr_program_emit", "layer");
    std::string text = program->program.emit(layer);
    char* s = static_cast<char*>(std::malloc(text.size() + 1));
    if (!s) throw std::bad_alloc();
    std::memcpy(s, text.c_str(), text.size() + 1);
    *text_out = s;
  });
}

void tsr_string_free(char* text) { std::free(text); }

size_t tsr_program_num_inputs(const tsr_program* program) {
  return program ? program->program.executable().input_types().size() : 0;
}

size_t tsr_program_num_outputs(const tsr_program* program) {
  return program ? program->program.executable().output_types().size() : 0;
}

tsr_status tsr_program_input(const tsr_program* program, size_t index, tsr_tensor_info* info) {
  return guard(TSR_ERR_INTERNAL, [&] {
    require(program, "tsr_program_input", "program");
    require(info, "tsr_program_input", "info");
    const auto& exe = program->program.executable();
    if (index >= exe.input_types().size())
      arg_fail("E901", "tsr_program_input: index " + std::to_string(index) + " is out of range; @" + exe.func_name() +
                           " has " + std::to_string(exe.input_types().size()) + " inputs");
    fill_info("tsr_program_input", "input", index, exe.input_names()[index], exe.input_types()[index], info);
  });
}

tsr_status tsr_program_output(const tsr_program* program, size_t index, tsr_tensor_info* info) {
  return guard(TSR_ERR_INTERNAL, [&] {
    require(program, "tsr_program_output", "program");
    require(info, "tsr_program_output", "info");
    const auto& exe = program->program.executable();
    if (index >= exe.output_types().size())
      arg_fail("E901", "tsr_program_output: index " + std::to_string(index) + " is out of range; @" + exe.func_name() +
                           " has " + std::to_string(exe.output_types().size()) + " outputs");
    fill_info("tsr_program_output", "output", index, exe.output_names()[index], exe.output_types()[index], info);
  });
}

tsr_status tsr_program_run(const tsr_program* program, const tsr_buffer* inputs, size_t n_inputs, tsr_buffer* outputs,
                           size_t n_outputs, tsr_launch* launches, size_t launch_capacity, size_t* n_launches) {
  if (n_launches) *n_launches = 0;
  return guard(TSR_ERR_RUNTIME, [&] {
    require(program, "tsr_program_run", "program");
    if (n_inputs > 0) require(inputs, "tsr_program_run", "inputs");
    if (n_outputs > 0) require(outputs, "tsr_program_run", "outputs");
    if (launch_capacity > 0) require(launches, "tsr_program_run", "launches");
    const auto& exe = program->program.executable();
    const std::string& func = exe.func_name();
    if (n_inputs != exe.input_types().size())
      arg_fail("E903", "tsr_program_run: @" + func + " takes " + std::to_string(exe.input_types().size()) +
                           " inputs, got " + std::to_string(n_inputs));
    if (n_outputs != exe.output_types().size())
      arg_fail("E903", "tsr_program_run: @" + func + " has " + std::to_string(exe.output_types().size()) +
                           " outputs, got " + std::to_string(n_outputs) + " output buffers");
    for (size_t i = 0; i < n_inputs; ++i)
      check_buffer("input", i, exe.input_names()[i], func, inputs[i], exe.input_types()[i]);
    for (size_t i = 0; i < n_outputs; ++i)
      check_buffer("output", i, exe.output_names()[i], func, outputs[i], exe.output_types()[i]);

    std::vector<tessera::Tensor> in;
    in.reserve(n_inputs);
    for (size_t i = 0; i < n_inputs; ++i) {
      const Type& t = exe.input_types()[i];
      tessera::Tensor tensor = tessera::Tensor::empty(t.dtype, t.shape);
      if (tensor.nbytes() > 0) std::memcpy(tensor.data(), inputs[i].data, tensor.nbytes());
      in.push_back(std::move(tensor));
    }

    tessera::runtime::RunResult result = program->program.run(in);

    if (result.outputs.size() != n_outputs)
      throw ApiError{TSR_ERR_INTERNAL, "E999",
                     "tsr_program_run: @" + func + " returned " + std::to_string(result.outputs.size()) +
                         " outputs, expected " + std::to_string(n_outputs)};
    for (size_t i = 0; i < n_outputs; ++i) {
      const Type& t = exe.output_types()[i];
      const tessera::Tensor& r = result.outputs[i];
      if (r.dtype() != t.dtype || r.shape() != t.shape || !r.valid())
        throw ApiError{TSR_ERR_INTERNAL, "E999",
                       "tsr_program_run: output " + std::to_string(i) + " of @" + func + " came back as " +
                           r.type_string() + ", expected " + t.str()};
    }
    // Everything checked: only now write into the caller's memory.
    for (size_t i = 0; i < n_outputs; ++i) {
      const tessera::Tensor& r = result.outputs[i];
      if (r.nbytes() > 0) std::memcpy(outputs[i].data, r.data(), r.nbytes());
    }
    size_t n = result.launches.size() < launch_capacity ? result.launches.size() : launch_capacity;
    for (size_t i = 0; i < n; ++i) {
      const tessera::runtime::LaunchRecord& rec = result.launches[i];
      tsr_launch l;
      std::memset(&l, 0, sizeof l);
      copy_string(l.kernel, sizeof l.kernel, rec.kernel);
      copy_string(l.placement, sizeof l.placement, rec.placement);
      copy_string(l.sha256, sizeof l.sha256, rec.sha256);
      l.programs = rec.programs;
      l.kernel_wall_ns = rec.kernel_wall_ns;
      launches[i] = l;
    }
    if (n_launches) *n_launches = result.launches.size();
  });
}

}  // extern "C"
