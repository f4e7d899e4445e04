// Tessera's diagnostics as Python exceptions: every tessera::Error becomes
// the tessera.errors class of its code, carrying the code, the message and
// (for IR text) file, line and column.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

namespace tessera::python {

void register_error_translator();

}  // namespace tessera::python
