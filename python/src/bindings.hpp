// The parts of tessera._core, each bound in its own file.
#pragma once
#include <nanobind/nanobind.h>

namespace tessera::python {

void bind_graph_builder(nanobind::module_& m);
void bind_program(nanobind::module_& m);
void bind_dispatcher(nanobind::module_& m);
void bind_evidence(nanobind::module_& m);

}  // namespace tessera::python
