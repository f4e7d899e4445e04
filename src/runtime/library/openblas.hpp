// The OpenBLAS library candidate on the CPU (Debian's libopenblas0-pthread),
// loaded with dlopen at first use so one build runs without it: a machine
// without OpenBLAS refuses the candidate with E760 and never runs something else.
#pragma once
#include <functional>
#include <string>

#include "ir/library_call.hpp"

namespace tessera::runtime {

// The call for one record, ready to run on (a, b, out) buffers; E760 if
// OpenBLAS cannot be loaded, E761 if the record is not an sgemm it does.
std::function<void(void* const* buffers)> openblas_matmul(const ir::LibraryMatmul& call);

// "OpenBLAS 0.3.21 ..." (its build configuration), or E760.
std::string openblas_version();

}  // namespace tessera::runtime
