#include "errors.hpp"

#include <exception>
#include <string>

#include "support/diagnostic.hpp"

namespace nb = nanobind;

namespace tessera::python {

namespace {

// Raises from_diagnostic(...)'s exception; the Python side owns the classes.
void raise(const std::string& code, const std::string& message, const SourceLoc& loc, const std::string& text) {
  static nb::object* from_diagnostic = new nb::object(
      nb::module_::import_("tessera.errors").attr("from_diagnostic"));  // kept to exit
  nb::object file = loc.known() ? nb::object(nb::str(loc.file.c_str())) : nb::none();
  nb::object line = loc.known() ? nb::object(nb::int_(loc.line)) : nb::none();
  nb::object col = loc.known() ? nb::object(nb::int_(loc.col)) : nb::none();
  nb::object error = (*from_diagnostic)(code, message, file, line, col, text);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
}

}  // namespace

void register_error_translator() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      raise(e.code(), e.message(), e.loc(), e.what());
    } catch (const InternalError& e) {
      raise("E999", e.what(), {}, std::string("error[E999]: internal error: ") + e.what());
    }
  });
}

}  // namespace tessera::python
