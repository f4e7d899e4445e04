// tessera._core: the native half of `import tessera`. The Python package
// (python/tessera) traces functions into Graph IR through GraphBuilder and
// runs them through Program; this module holds no logic of its own beyond
// moving arrays and errors across the boundary.
#include <nanobind/nanobind.h>

#include <nanobind/stl/string.h>

#include "arrays.hpp"
#include "bindings.hpp"
#include "errors.hpp"

NB_MODULE(_core, m) {
  m.doc() = "Tessera's compiler and runtime (the native core of the tessera package).";
  tessera::python::register_error_translator();
  tessera::python::bind_graph_builder(m);
  tessera::python::bind_program(m);
  tessera::python::bind_dispatcher(m);
  tessera::python::bind_evidence(m);
  m.def(
      "array_signature",
      [](nanobind::handle array, size_t position) {
        const tessera::python::BorrowedArray a = tessera::python::borrow_array(array, position);
        nanobind::list shape;
        for (int64_t d : a.shape) shape.append(d);
        return nanobind::make_tuple(std::string(tessera::dtype_name(a.dtype)), nanobind::tuple(shape));
      },
      nanobind::arg("array"), nanobind::arg("position") = 0,
      "(dtype, shape) of an array as a call would take it, for objects that expose only __dlpack__; raises the "
      "call's error (E930-E934) for one it would refuse.");
}
