// The whole --check of one run: every kernel against the oracle of its own
// region (kernel_check.hpp), then every result end to end, as one report that
// the CLI prints and the Python front end returns.
#pragma once
#include <string>
#include <vector>

#include "ir/ir.hpp"
#include "oracle/reference.hpp"
#include "runtime/host_schedule.hpp"
#include "runtime/tensor.hpp"

namespace tessera::oracle {

// A sampled check compares this grid of rows x columns of every big value.
constexpr int64_t kCheckRows = 32, kCheckCols = 32;

struct CheckedValue {
  std::string what;  // "kernel @k1+@k2 -> %h" or "%out end to end"
  int64_t elements = 0;
  Comparison comparison;
  // One line ("check <what>  max_abs_err=...  PASS"), and for a failure a
  // second with its first element out of tolerance.
  std::string describe() const;
};

struct RunCheck {
  std::vector<CheckedValue> values;  // the per-kernel ones, then the end-to-end ones
  bool ok = true;
  std::string first_failure;  // names the kernel (or result) that failed first; empty when ok
  double seconds = 0;
  size_t kernels = 0, results = 0;  // launches checked, results compared
  std::string summary() const;      // the last line: how many passed, or which failed
};

// `values` holds every value slot of the run (RunResult::values, keep_values:
// the inputs first, as the kernels read them, even where an in-place result
// has overwritten one since); `graph` is the Graph IR the run was lowered from.
RunCheck check_run(const ir::Module& graph, const runtime::HostSchedule& h, const std::vector<Tensor>& values);

}  // namespace tessera::oracle
