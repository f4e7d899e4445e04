// tessera._core: the native half of `import tessera`. The Python package
// (python/tessera) traces functions into Graph IR through GraphBuilder and
// runs them through Program; this module holds no logic of its own beyond
// moving arrays and errors across the boundary.
#include <nanobind/nanobind.h>

#include "bindings.hpp"
#include "errors.hpp"

NB_MODULE(_core, m) {
  m.doc() = "Tessera's compiler and runtime (the native core of the tessera package).";
  tessera::python::register_error_translator();
  tessera::python::bind_graph_builder(m);
  tessera::python::bind_program(m);
}
