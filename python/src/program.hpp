// tessera._core.Program: IR text compiled for a target and loaded once, then
// called on borrowed arrays. The dispatcher of a jitted function
// (dispatch.cpp) calls it without going back through Python.
#pragma once
#include <nanobind/nanobind.h>

#include <optional>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "oracle/run_check.hpp"
#include "runtime/cuda/cuda_executable.hpp"
#include "targets/lane.hpp"
#include "tessera/tessera.hpp"

namespace tessera::python {

struct PyProgram {
  Program program;
  std::string target;
  std::vector<std::string> arbiter_table;  // one table per matmul region the arbiter decided
  size_t matmul_regions = 0;               // of the Graph IR (0 for a lower layer)
  const targets::Lane* lane = nullptr;
  std::vector<runtime::LaunchRecord> last_launches;            // of a host call
  const runtime::cuda::CudaExecutable* last_device = nullptr;  // set when the last call ran on CUDA arrays
  std::optional<oracle::RunCheck> last_check;
  std::vector<uintptr_t> last_inputs, last_outputs;
};

// The arrays of one call, as borrow_array takes them (with the consumer
// stream of `stream` when one is named).
std::vector<BorrowedArray> borrow_call_arrays(nanobind::handle arrays, nanobind::handle stream);
// Runs on them (E931 unless they are all on the program's device); a tuple of
// results in the first array's framework.
nanobind::tuple run_program(PyProgram& p, const std::vector<BorrowedArray>& in, nanobind::handle stream, bool check);

}  // namespace tessera::python
